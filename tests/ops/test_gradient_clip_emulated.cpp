// The device code of gradient_clip's CUDA kernel, run on a host thread by
// support/cuda_host_emulation.h: the same bits as the CPU op, and a norm that is not finite
// recorded in the call's index-check word with the factor NaN. tests/cuda runs the kernel itself.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "attnlab/attnlab.h"
// After every other header: the emulation defines CUDA's keywords as macros.
#include "support/cuda_host_emulation.h"
#include "ops/gradient_clip_kernels.cuh"

using namespace attnlab;
namespace gk = attnlab::cuda::gradient_clip_kernels;
namespace emu = cuda_host_emulation;
namespace ic = attnlab::index_check;

TEST_CASE("emulated gradient_clip kernel: the CPU op's norm and factor, and non-finite norms recorded") {
  for (double squares : {25.0, 2.0, 0.0, 1e-30, 4.0, 1e300}) {
    for (double max_norm : {0.5, 2.0, 1e3}) {
      CAPTURE(squares);
      CAPTURE(max_norm);
      double norm = -1.0, factor = -1.0;
      std::uint64_t word = ic::kClean;
      // More threads than one: only thread 0 of block 0 writes.
      emu::launch(dim3(2), 32, [&] { gk::clip_kernel(&squares, max_norm, &word, &norm, &factor); });
      const GradientClip cpu = gradient_clip(Tensor::full(Shape{}, squares, DType::f64), max_norm);
      CHECK(norm == cpu.norm.item());
      CHECK(factor == cpu.factor.item());
      CHECK(word == ic::kClean);
    }
  }
  for (double squares : {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()}) {
    CAPTURE(squares);
    double norm = 0.0, factor = 0.0;
    std::uint64_t word = ic::kClean;
    emu::launch(dim3(1), 1, [&] { gk::clip_kernel(&squares, 1.0, &word, &norm, &factor); });
    CHECK(word != ic::kClean);
    CHECK(ic::key_position(word) == 0);
    CHECK(ic::key_value(word) == (std::isnan(squares) ? 1 : 0));
    CHECK(std::isnan(factor));
    // No word (checked elsewhere): nothing recorded, still NaN.
    emu::launch(dim3(1), 1, [&] { gk::clip_kernel(&squares, 1.0, nullptr, &norm, &factor); });
    CHECK(std::isnan(factor));
  }
}
