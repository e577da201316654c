// The vectorized f32 <-> bf16 kernels of Tensor::to on CUDA (cuda/convert_kernels.cuh), run on
// host threads by support/cuda_host_emulation.h against the CPU's conversion: every bf16 pattern
// widened, f32 values around every rounding case narrowed, with lengths that leave every tail of
// the groups of eight and grids smaller than the work (the grid-stride loops). tests/cuda runs the
// kernels themselves through Tensor::to.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "attnlab/attnlab.h"
#include "cpu/convert_bf16.h"
// After every other header: the emulation defines CUDA's keywords as macros.
#include "support/cuda_host_emulation.h"
#include "support/emulation_orders.h"
#include "cuda/convert_kernels.cuh"

using namespace attnlab;
namespace ck = attnlab::cuda::convert_kernels;
namespace emu = cuda_host_emulation;

namespace {

// f32 bit patterns around each rounding case of bf16: ties (even and odd), just above and below,
// exact values, infinities, NaNs (quiet and signalling, both signs), denormals, the largest finite
// values, and values that round up to infinity.
std::vector<std::uint32_t> f32_cases() {
  std::vector<std::uint32_t> v;
  for (std::uint32_t hi : {0x0000u, 0x0001u, 0x007fu, 0x0080u, 0x3f80u, 0x3f81u, 0x4049u, 0x7f7fu, 0x7f80u,
                           0x7fc0u, 0x7f81u, 0x8000u, 0xbf80u, 0xff80u, 0xffc1u, 0xc2f6u})
    for (std::uint32_t lo : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu, 0x4000u, 0xc000u})
      v.push_back(hi << 16 | lo);
  return v;
}

// Buffers 16-byte aligned, as the kernels require (a vector's storage is not guaranteed to be).
template <typename T>
struct Aligned {
  explicit Aligned(std::size_t n) : storage((n * sizeof(T) + 15) / 16 + 1) {}
  T* data() { return reinterpret_cast<T*>(storage.data()); }
  std::vector<uint4> storage;
};

}  // namespace

TEST_CASE("emulated f32 -> bf16 kernel: the CPU's bits for every length's tail and any grid") {
  const std::vector<std::uint32_t> cases = f32_cases();
  for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{8}, std::size_t{9}, std::size_t{63},
                        cases.size()}) {
    for (unsigned blocks : {1u, 3u}) {
      CAPTURE(n);
      CAPTURE(blocks);
      Aligned<float> in(n);
      Aligned<std::uint16_t> out(n);
      std::memcpy(in.data(), cases.data(), n * sizeof(float));
      std::vector<std::uint16_t> want(n);
      cpu::f32_to_bf16(in.data(), want.data(), static_cast<std::int64_t>(n));
      const std::vector<std::uint16_t> got = emu::in_every_thread_order([&] {
        std::fill(out.data(), out.data() + n, std::uint16_t{0x1234});
        emu::launch(dim3(blocks), 32,
                    [&] { ck::f32_to_bf16_kernel(in.data(), out.data(), static_cast<std::int64_t>(n)); });
        return std::vector<std::uint16_t>(out.data(), out.data() + n);
      });
      CHECK(got == want);
    }
  }
}

TEST_CASE("emulated bf16 -> f32 kernel: every bf16 value widened exactly") {
  const std::size_t n = 65536 + 5;  // every pattern, then a tail of five
  Aligned<std::uint16_t> in(n);
  Aligned<float> out(n);
  for (std::size_t i = 0; i < n; ++i) in.data()[i] = static_cast<std::uint16_t>(i * 40503u);
  std::vector<float> want(n);
  cpu::bf16_to_f32(in.data(), want.data(), static_cast<std::int64_t>(n));
  emu::launch(dim3(4), 64, [&] { ck::bf16_to_f32_kernel(in.data(), out.data(), static_cast<std::int64_t>(n)); });
  std::size_t differ = 0;
  for (std::size_t i = 0; i < n; ++i) differ += std::memcmp(&out.data()[i], &want[i], sizeof(float)) != 0;
  CHECK(differ == 0);
}

TEST_CASE("the vectorized conversion is taken only between 16-byte aligned buffers") {
  Aligned<float> buffer(8);
  CHECK(ck::aligned16(buffer.data()));
  CHECK_FALSE(ck::aligned16(buffer.data() + 1));
  CHECK_FALSE(ck::aligned16(reinterpret_cast<std::uint16_t*>(buffer.data()) + 4));
  CHECK(ck::aligned16(reinterpret_cast<std::uint16_t*>(buffer.data()) + 8));
}
