// Parity of the CUDA kernels of softmax, log_softmax, layer_norm, rms_norm, cross_entropy, sum/mean,
// permute, split and concat with the CPU reference, forward and backward, under the dtype
// tolerance table. Skipped without a CUDA device.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "attnlab/attnlab.h"
#include "support/cuda_testing.h"
#include "support/tensor_testing.h"

using namespace attnlab;
using testing::random_tensor;
using testing::tolerance_for;

namespace {

const DType kDTypes[] = {DType::f32, DType::f64};

// The same values as a CPU leaf and a CUDA leaf, both requiring gradients.
struct Leaves {
  Tensor cpu, gpu;
};
Leaves leaves(const Shape& shape, std::uint64_t seed, DType dtype, double lo = -2.0, double hi = 2.0) {
  Tensor c = random_tensor(shape, seed, lo, hi, dtype);
  Tensor g = c.to(Device::cuda());
  c.set_requires_grad();
  g.set_requires_grad();
  return {c, g};
}

void check_near(const Tensor& gpu, const Tensor& cpu, DType dtype) {
  CHECK_TENSOR_NEAR(gpu.to(Device::cpu()), cpu, tolerance_for(dtype));
}

// Runs backward on both with the same random output gradient and compares the leaf gradients.
void check_backward(const Tensor& y_cpu, const Tensor& y_gpu, const Leaves& x, DType dtype, std::uint64_t seed) {
  const Tensor dy = random_tensor(y_cpu.shape(), seed, -1.0, 1.0, dtype);
  y_cpu.backward(dy);
  y_gpu.backward(dy.to(Device::cuda()));
  check_near(x.gpu.grad(), x.cpu.grad(), dtype);
}

// Additive mask [B, 1, Tq, Tk] with -inf at some keys and one fully masked query row.
Tensor make_mask(std::int64_t b, std::int64_t tq, std::int64_t tk, DType dtype) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> m(static_cast<std::size_t>(b * tq * tk), 0.0);
  for (std::int64_t i = 0; i < b * tq; ++i)
    for (std::int64_t j = 0; j < tk; ++j) {
      const bool masked = (i % tq == 1) || ((i + j) % 3 == 0);  // row 1 of every batch fully masked
      m[static_cast<std::size_t>(i * tk + j)] = masked ? -inf : 0.0;
    }
  return Tensor::from_vector(Shape{b, 1, tq, tk}, m).to(dtype);
}

}  // namespace

TEST_CASE("cuda softmax and log_softmax match the cpu with masks and causal rows") {
  SKIP_WITHOUT_CUDA();
  for (DType dtype : kDTypes) {
    for (bool log : {false, true}) {
      for (int variant = 0; variant < 4; ++variant) {  // plain, mask, causal, mask + causal
        INFO("dtype ", dtype_name(dtype), " log ", log, " variant ", variant);
        const bool use_mask = variant == 1 || variant == 3;
        const bool causal = variant >= 2;
        const Leaves x = leaves(Shape{2, 3, 5, 300}, 11 + static_cast<std::uint64_t>(variant), dtype);
        const Tensor mask_cpu = use_mask ? make_mask(2, 5, 300, dtype) : Tensor();
        const Tensor mask_gpu = use_mask ? mask_cpu.to(Device::cuda()) : Tensor();
        const Tensor y_cpu = log ? log_softmax(x.cpu, mask_cpu, causal) : softmax(x.cpu, mask_cpu, causal);
        const Tensor y_gpu = log ? log_softmax(x.gpu, mask_gpu, causal) : softmax(x.gpu, mask_gpu, causal);
        check_near(y_gpu, y_cpu, dtype);
        check_backward(y_cpu, y_gpu, x, dtype, 99);
      }
    }
  }
}

TEST_CASE("cuda softmax of a causal square with more keys than queries matches the cpu") {
  SKIP_WITHOUT_CUDA();
  const Leaves x = leaves(Shape{4, 7}, 5, DType::f32);
  const Tensor y_cpu = softmax(x.cpu, Tensor(), true);
  const Tensor y_gpu = softmax(x.gpu, Tensor(), true);
  check_near(y_gpu, y_cpu, DType::f32);
  check_backward(y_cpu, y_gpu, x, DType::f32, 6);
}

TEST_CASE("cuda layer_norm forward and backward match the cpu") {
  SKIP_WITHOUT_CUDA();
  for (DType dtype : kDTypes) {
    for (std::int64_t rows : {3, 600}) {  // 600 rows: more than one chunk of the dgamma reduction
      INFO("dtype ", dtype_name(dtype), " rows ", rows);
      const Leaves x = leaves(Shape{rows, 96}, 21, dtype);
      const Leaves gamma = leaves(Shape{96}, 22, dtype, 0.5, 1.5);
      const Leaves beta = leaves(Shape{96}, 23, dtype);
      const Tensor y_cpu = layer_norm(x.cpu, gamma.cpu, beta.cpu, 1e-5);
      const Tensor y_gpu = layer_norm(x.gpu, gamma.gpu, beta.gpu, 1e-5);
      check_near(y_gpu, y_cpu, dtype);
      check_backward(y_cpu, y_gpu, x, dtype, 24);
      check_near(gamma.gpu.grad(), gamma.cpu.grad(), dtype);
      check_near(beta.gpu.grad(), beta.cpu.grad(), dtype);
    }
  }
}

TEST_CASE("cuda cross_entropy with label smoothing and ignored targets matches the cpu") {
  SKIP_WITHOUT_CUDA();
  for (DType dtype : kDTypes) {
    for (DType index : {DType::i32, DType::i64}) {
      INFO("dtype ", dtype_name(dtype), " targets ", dtype_name(index));
      const Leaves logits = leaves(Shape{9, 1000}, 31, dtype, -4.0, 4.0);
      std::vector<std::int64_t> t = {3, -100, 999, 0, 17, -100, 500, 42, 7};
      const Tensor targets_cpu = Tensor::from_vector(Shape{9}, t).to(index);
      const Tensor targets_gpu = targets_cpu.to(Device::cuda());
      const CrossEntropyResult r_cpu = cross_entropy(logits.cpu, targets_cpu, 0.1, -100);
      const CrossEntropyResult r_gpu = cross_entropy(logits.gpu, targets_gpu, 0.1, -100);
      CHECK(r_gpu.tokens.item() == r_cpu.tokens.item());
      check_near(r_gpu.loss_sum, r_cpu.loss_sum, dtype);
      r_cpu.loss_sum.backward();
      r_gpu.loss_sum.backward();
      check_near(logits.gpu.grad(), logits.cpu.grad(), dtype);
    }
  }
}

TEST_CASE("cuda symmetric_kl (composed of the row ops there) matches the fused cpu kernel") {
  SKIP_WITHOUT_CUDA();
  for (DType dtype : kDTypes) {
    INFO("dtype ", dtype_name(dtype));
    const Leaves a = leaves(Shape{9, 1000}, 41, dtype, -4.0, 4.0);
    const Leaves b = leaves(Shape{9, 1000}, 42, dtype, -4.0, 4.0);
    const Tensor targets_cpu = Tensor::from_vector<std::int64_t>({9}, {3, -100, 999, 0, 17, -100, 500, 42, 7});
    const Tensor kl_cpu = symmetric_kl(a.cpu, b.cpu, targets_cpu, -100);
    const Tensor kl_gpu = symmetric_kl(a.gpu, b.gpu, targets_cpu.to(Device::cuda()), -100);
    check_near(kl_gpu, kl_cpu, dtype);
    kl_cpu.backward();
    kl_gpu.backward();
    check_near(a.gpu.grad(), a.cpu.grad(), dtype);
    check_near(b.gpu.grad(), b.cpu.grad(), dtype);
  }
}

TEST_CASE("cuda sum and mean full and per axis match the cpu") {
  SKIP_WITHOUT_CUDA();
  for (DType dtype : kDTypes) {
    INFO("dtype ", dtype_name(dtype));
    {
      const Leaves x = leaves(Shape{50000}, 41, dtype);  // several chunks of the full reduction
      const Tensor y_cpu = sum(x.cpu);
      const Tensor y_gpu = sum(x.gpu);
      check_near(y_gpu, y_cpu, dtype);
      check_backward(y_cpu, y_gpu, x, dtype, 42);
    }
    for (int axis : {0, 1, 2}) {
      INFO("axis ", axis);
      const Leaves x = leaves(Shape{4, 33, 17}, 43 + static_cast<std::uint64_t>(axis), dtype);
      const Tensor y_cpu = mean(x.cpu, axis, axis == 1);
      const Tensor y_gpu = mean(x.gpu, axis, axis == 1);
      check_near(y_gpu, y_cpu, dtype);
      check_backward(y_cpu, y_gpu, x, dtype, 47);
    }
  }
}

TEST_CASE("cuda permute split and concat match the cpu") {
  SKIP_WITHOUT_CUDA();
  for (DType dtype : kDTypes) {
    INFO("dtype ", dtype_name(dtype));
    {
      const Leaves x = leaves(Shape{2, 5, 3, 4}, 51, dtype);
      const Tensor y_cpu = permute(x.cpu, {0, 2, 1, 3});
      const Tensor y_gpu = permute(x.gpu, {0, 2, 1, 3});
      check_near(y_gpu, y_cpu, dtype);
      check_backward(y_cpu, y_gpu, x, dtype, 52);
    }
    {
      const Leaves x = leaves(Shape{3, 4, 5}, 53, dtype);
      const Tensor y_cpu = permute(x.cpu, {2, 0, 1});
      const Tensor y_gpu = permute(x.gpu, {2, 0, 1});
      check_near(y_gpu, y_cpu, dtype);
      check_backward(y_cpu, y_gpu, x, dtype, 54);
    }
    {
      const Leaves x = leaves(Shape{3, 10, 4}, 55, dtype);
      const std::vector<Tensor> p_cpu = split(x.cpu, 1, {2, 0, 5, 3});
      const std::vector<Tensor> p_gpu = split(x.gpu, 1, {2, 0, 5, 3});
      REQUIRE(p_cpu.size() == p_gpu.size());
      for (std::size_t i = 0; i < p_cpu.size(); ++i) check_near(p_gpu[i], p_cpu[i], dtype);
      // concat of the pieces in another order, then backward through concat and split.
      const Tensor y_cpu = concat({p_cpu[2], p_cpu[0], p_cpu[3], p_cpu[1]}, 1);
      const Tensor y_gpu = concat({p_gpu[2], p_gpu[0], p_gpu[3], p_gpu[1]}, 1);
      check_near(y_gpu, y_cpu, dtype);
      check_backward(y_cpu, y_gpu, x, dtype, 56);
    }
  }
}

TEST_CASE("cuda softmax with broadcast padding and per-row masks matches the cpu") {
  SKIP_WITHOUT_CUDA();
  // Masks broadcast along other axes than make_mask's: the padding mask [B, 1, 1, Tk], one mask
  // for every batch [1, 1, Tq, Tk], and masks of last extent 1 (one value per row, read with key
  // step 0) with -inf rows that mask a whole query.
  const double inf = std::numeric_limits<double>::infinity();
  const Shape x_shape{2, 3, 4, 37};
  const std::vector<Shape> mask_shapes = {{2, 1, 1, 37}, {1, 1, 4, 37}, {2, 3, 4, 1}, {1, 3, 1, 1}};
  for (DType dtype : kDTypes) {
    for (std::size_t v = 0; v < mask_shapes.size(); ++v) {
      for (bool log : {false, true}) {
        for (bool causal : {false, true}) {
          INFO("dtype ", dtype_name(dtype), " mask ", mask_shapes[v].str(), " log ", log, " causal ", causal);
          const Shape& ms = mask_shapes[v];
          std::vector<double> m = random_tensor(ms, 61 + v, -1.0, 1.0, DType::f64).to_vector<double>();
          for (std::size_t i = 0; i < m.size(); ++i)
            if (i % 5 == 2) m[i] = -inf;
          const Tensor mask_cpu = Tensor::from_vector(ms, m).to(dtype);
          const Leaves x = leaves(x_shape, 71 + v, dtype);
          const Tensor y_cpu = log ? log_softmax(x.cpu, mask_cpu, causal) : softmax(x.cpu, mask_cpu, causal);
          const Tensor mask_gpu = mask_cpu.to(Device::cuda());
          const Tensor y_gpu = log ? log_softmax(x.gpu, mask_gpu, causal) : softmax(x.gpu, mask_gpu, causal);
          check_near(y_gpu, y_cpu, dtype);
          check_backward(y_cpu, y_gpu, x, dtype, 81);
        }
      }
    }
  }
}

TEST_CASE("cuda softmax with more queries than keys and with one key matches the cpu") {
  SKIP_WITHOUT_CUDA();
  // Causal with Tq > Tk: the first Tq - Tk queries see no key (limit 0, fully masked rows).
  for (DType dtype : kDTypes) {
    for (const Shape& shape : {Shape{2, 7, 4}, Shape{5, 1}, Shape{3, 6, 1}}) {
      for (bool log : {false, true}) {
        INFO("dtype ", dtype_name(dtype), " shape ", shape.str(), " log ", log);
        const Leaves x = leaves(shape, 91, dtype);
        const Tensor y_cpu = log ? log_softmax(x.cpu, Tensor(), true) : softmax(x.cpu, Tensor(), true);
        const Tensor y_gpu = log ? log_softmax(x.gpu, Tensor(), true) : softmax(x.gpu, Tensor(), true);
        check_near(y_gpu, y_cpu, dtype);
        check_backward(y_cpu, y_gpu, x, dtype, 92);
      }
    }
  }
}

TEST_CASE("cuda softmax of a row holding a NaN gives NaN like the cpu") {
  SKIP_WITHOUT_CUDA();
  // A NaN must not be taken for a fully masked row: the row comes out NaN (as on the CPU) and the
  // block's threads stay together through the reductions; the other rows are unaffected. With 300
  // columns over 256 threads, columns 95 and 287 are the last element (so the partial max) of
  // threads 95 and 31, lane 31 of their warp: there a max that is not commutative in NaN (the
  // former `a > b ? a : b`) hands the NaN to lane 0 and then to one lane of every warp, whose
  // threads took the row for fully masked and left the others alone at the next barrier.
  const std::int64_t rows = 4, cols = 300;
  for (DType dtype : kDTypes) {
    for (bool log : {false, true}) {
      INFO("dtype ", dtype_name(dtype), " log ", log);
      std::vector<double> v = random_tensor({rows, cols}, 93, -2.0, 2.0, DType::f64).to_vector<double>();
      v[1 * cols + 95] = std::numeric_limits<double>::quiet_NaN();
      v[2 * cols + 287] = std::numeric_limits<double>::quiet_NaN();
      const Tensor x = Tensor::from_vector(Shape{rows, cols}, v).to(dtype);
      const std::vector<double> want = (log ? log_softmax(x) : softmax(x)).to_vector<double>();
      const std::vector<double> got = (log ? log_softmax(x.to(Device::cuda())) : softmax(x.to(Device::cuda())))
                                          .to_vector<double>();
      REQUIRE(got.size() == want.size());
      for (std::size_t i = 0; i < got.size(); ++i) {
        const bool nan_row = i / cols == 1 || i / cols == 2;
        INFO("element ", i);
        CHECK(std::isnan(want[i]) == nan_row);  // the reference itself
        if (nan_row)
          CHECK(std::isnan(got[i]));
        else
          CHECK(std::abs(got[i] - want[i]) <= tolerance_for(dtype).abs + tolerance_for(dtype).rel * std::abs(want[i]));
      }
    }
  }
}

TEST_CASE("cuda layer_norm and rms_norm with odd widths and without affine parameters match the cpu") {
  SKIP_WITHOUT_CUDA();
  // Widths below one warp, between warps and above the 256 threads of a row block; no gamma and
  // beta, gamma alone, or both; centred (layer_norm) and not (rms_norm).
  for (const bool rms : {false, true})
  for (DType dtype : kDTypes) {
    for (std::int64_t d : {1, 7, 300, 1000}) {
      for (int affine = 0; affine < 3; ++affine) {
        INFO(std::string(rms ? "rms_norm" : "layer_norm"), " dtype ", dtype_name(dtype), " d ", d, " affine ", affine);
        const auto norm = [rms](const Tensor& x, const Tensor& g, const Tensor& b) {
          return rms ? rms_norm(x, g, b, 1e-5) : layer_norm(x, g, b, 1e-5);
        };
        const Leaves x = leaves(Shape{5, 3, d}, 101, dtype);
        const Leaves gamma = leaves(Shape{d}, 102, dtype, 0.5, 1.5);
        const Leaves beta = leaves(Shape{d}, 103, dtype);
        const Tensor g_cpu = affine >= 1 ? gamma.cpu : Tensor(), g_gpu = affine >= 1 ? gamma.gpu : Tensor();
        const Tensor b_cpu = affine >= 2 ? beta.cpu : Tensor(), b_gpu = affine >= 2 ? beta.gpu : Tensor();
        const Tensor y_cpu = norm(x.cpu, g_cpu, b_cpu);
        const Tensor y_gpu = norm(x.gpu, g_gpu, b_gpu);
        check_near(y_gpu, y_cpu, dtype);
        check_backward(y_cpu, y_gpu, x, dtype, 104);
        if (affine >= 1) check_near(gamma.gpu.grad(), gamma.cpu.grad(), dtype);
        if (affine >= 2) check_near(beta.gpu.grad(), beta.cpu.grad(), dtype);
      }
    }
  }
}

TEST_CASE("cuda layer_norm parameter gradients over more than 65535 row chunks match the cpu") {
  SKIP_WITHOUT_CUDA();
  // dgamma and dbeta sum chunks of 256 rows on the grid's y axis, which holds at most 65535
  // blocks: more rows than 65535 * 256 need the chunks strided over it.
  const std::int64_t rows = std::int64_t{65535} * 256 + 300;
  const Tensor x = random_tensor({rows, 2}, 105, -2.0, 2.0);
  const Leaves gamma = leaves(Shape{2}, 106, DType::f32, 0.5, 1.5);
  const Leaves beta = leaves(Shape{2}, 107, DType::f32);
  const Tensor y_cpu = layer_norm(x, gamma.cpu, beta.cpu, 1e-5);
  const Tensor y_gpu = layer_norm(x.to(Device::cuda()), gamma.gpu, beta.gpu, 1e-5);
  const Tensor dy = random_tensor({rows, 2}, 108);
  y_cpu.backward(dy);
  y_gpu.backward(dy.to(Device::cuda()));
  check_near(gamma.gpu.grad(), gamma.cpu.grad(), DType::f32);
  check_near(beta.gpu.grad(), beta.cpu.grad(), DType::f32);
}

TEST_CASE("cuda cross_entropy with a small vocabulary and an ignore_index inside it matches the cpu") {
  SKIP_WITHOUT_CUDA();
  // V = 5 (most threads of a row block idle); ignore_index = 2 is also a valid class, so targets
  // equal to 2 are dropped, not scored; with and without label smoothing.
  for (DType dtype : kDTypes) {
    for (double eps : {0.0, 0.2}) {
      INFO("dtype ", dtype_name(dtype), " eps ", eps);
      const Leaves logits = leaves(Shape{37, 5}, 111, dtype, -3.0, 3.0);
      const Tensor targets = testing::random_ids({37}, 112, 5, DType::i64);
      const CrossEntropyResult r_cpu = cross_entropy(logits.cpu, targets, eps, 2);
      const CrossEntropyResult r_gpu = cross_entropy(logits.gpu, targets.to(Device::cuda()), eps, 2);
      CHECK(r_gpu.tokens.item() == r_cpu.tokens.item());
      CHECK(r_cpu.tokens.item() < 37);  // the seed does draw some 2s
      check_near(r_gpu.loss_sum, r_cpu.loss_sum, dtype);
      const Tensor g = Tensor::full(Shape{}, 0.5, dtype);  // a non-unit upstream gradient
      r_cpu.loss_sum.backward(g);
      r_gpu.loss_sum.backward(g.to(Device::cuda()));
      check_near(logits.gpu.grad(), logits.cpu.grad(), dtype);
    }
  }
}

TEST_CASE("cuda cross_entropy with every target ignored gives zero loss and gradient") {
  SKIP_WITHOUT_CUDA();
  const Leaves logits = leaves(Shape{4, 300}, 113, DType::f32);
  const Tensor targets = Tensor::from_vector<std::int32_t>({4}, {-100, -100, -100, -100}).to(Device::cuda());
  const CrossEntropyResult r = cross_entropy(logits.gpu, targets, 0.1, -100);
  CHECK(r.tokens.item() == 0);
  CHECK(r.loss_sum.item() == 0.0);
  r.loss_sum.backward();
  CHECK_TENSOR_NEAR(logits.gpu.grad().to(Device::cpu()), Tensor::zeros({4, 300}), testing::Tolerance{0.0, 0.0});
}

TEST_CASE("cuda cross_entropy checks and counts its targets on the device, reporting a bad one at the next wait") {
  SKIP_WITHOUT_CUDA();
  const Device gpu = Device::cuda();
  const Tensor logits = random_tensor({6, 5}, 114, -1.0, 1.0, DType::f32).to(gpu);
  const Tensor good = Tensor::from_vector<std::int64_t>({6}, {0, 4, -100, 3, -100, 1}).to(gpu);
  HostWaits before = host_waits(gpu);
  const CrossEntropyResult r = cross_entropy(logits, good, 0.1, -100);
  CHECK((host_waits(gpu) - before).synchronizations == 0);  // nothing read on the host
  CHECK(r.tokens.device() == gpu);
  CHECK(r.tokens.item() == 4);
  const Tensor bad = Tensor::from_vector<std::int64_t>({6}, {0, 4, 5, -1, -100, 1}).to(gpu);
  before = host_waits(gpu);
  const CrossEntropyResult rb = cross_entropy(logits, bad, 0.1, -100);
  CHECK((host_waits(gpu) - before).synchronizations == 0);
  CHECK_THROWS_WITH_AS(rb.loss_sum.item(),
                       doctest::Contains("cross_entropy: target 5 at position 2 is out of range for V = 5 (targets "
                                         "must be in [0, 5) or equal ignore_index = -100)"),
                       Error);
  CHECK(std::isnan(rb.loss_sum.item()));  // reported once; the bad rows' losses are NaN
  CHECK(rb.tokens.item() == 3);           // the bad targets are not counted
}

TEST_CASE("cuda sum and mean of long rows and long columns match the cpu") {
  SKIP_WITHOUT_CUDA();
  // [3, 20000] along axis 1: three rows of three 8192-value chunks each (the chunk index and
  // the row index both taken from blockIdx.x); [20000, 3] along axis 0: the strided kernel.
  for (DType dtype : kDTypes) {
    for (int axis : {0, 1}) {
      INFO("dtype ", dtype_name(dtype), " axis ", axis);
      const Shape shape = axis == 1 ? Shape{3, 20000} : Shape{20000, 3};
      const Leaves x = leaves(shape, 121 + static_cast<std::uint64_t>(axis), dtype);
      const Tensor s_cpu = sum(x.cpu, axis), s_gpu = sum(x.gpu, axis);
      check_near(s_gpu, s_cpu, dtype);
      check_backward(s_cpu, s_gpu, x, dtype, 123);
      check_near(mean(x.gpu, axis, true), mean(x.cpu, axis, true), dtype);
    }
  }
}

TEST_CASE("cuda permute split and concat move bf16 and integer elements exactly") {
  SKIP_WITHOUT_CUDA();
  // Element sizes 2, 4, 8 and 1; split and concat along the first axis (one row: a plain copy)
  // and along the last one (many strided rows).
  const Tensor base = random_tensor({4, 3, 5, 6}, 131, -50.0, 50.0);
  const testing::Tolerance exact{0.0, 0.0};
  for (DType dtype : {DType::bf16, DType::i32, DType::i64, DType::u8}) {
    INFO("dtype ", dtype_name(dtype));
    const Tensor x = dtype == DType::u8 ? random_tensor({4, 3, 5, 6}, 132, 0.0, 250.0).to(DType::u8) : base.to(dtype);
    const Tensor x_gpu = x.to(Device::cuda());
    CHECK_TENSOR_NEAR(permute(x_gpu, {3, 1, 0, 2}).to(Device::cpu()).to(DType::f64),
                      permute(x, {3, 1, 0, 2}).to(DType::f64), exact);
    for (int axis : {0, 3}) {
      INFO("axis ", axis);
      const std::vector<std::int64_t> sizes = axis == 0 ? std::vector<std::int64_t>{1, 3}
                                                        : std::vector<std::int64_t>{4, 0, 2};
      const std::vector<Tensor> p_cpu = split(x, axis, sizes);
      const std::vector<Tensor> p_gpu = split(x_gpu, axis, sizes);
      REQUIRE(p_cpu.size() == p_gpu.size());
      for (std::size_t i = 0; i < p_cpu.size(); ++i)
        CHECK_TENSOR_NEAR(p_gpu[i].to(Device::cpu()).to(DType::f64), p_cpu[i].to(DType::f64), exact);
      std::vector<Tensor> r_cpu(p_cpu.rbegin(), p_cpu.rend()), r_gpu(p_gpu.rbegin(), p_gpu.rend());
      CHECK_TENSOR_NEAR(concat(r_gpu, axis).to(Device::cpu()).to(DType::f64), concat(r_cpu, axis).to(DType::f64),
                        exact);
    }
  }
}

TEST_CASE("cuda split and concat of rows over 2 GiB") {
  SKIP_WITHOUT_CUDA();
  // cudaMemcpy2DAsync refuses pitches above 2^31 - 1 bytes. Along axis 0 the pitch is the whole
  // tensor (one row: a plain copy); along axis 1 of a [2, 600M] f32 tensor each row is 2.4 GB
  // (rows copied one by one). Constant pieces, checked by sums that f32 holds exactly.
  const std::int64_t half = 300'000'000;
  const Device gpu = Device::cuda();
  const Tensor ones = Tensor::full({1, half}, 1.0, DType::f32, gpu);
  const Tensor twos = Tensor::full({1, half}, 2.0, DType::f32, gpu);
  {
    const Tensor rows = concat({ones, twos}, 0);  // [2, 300M]: 2.4 GB in one row of the copy
    CHECK_TENSOR_NEAR(sum(rows, 1).to(Device::cpu()), Tensor::from_vector<float>({2}, {3e8f, 6e8f}),
                      testing::Tolerance{0.0, 0.0});
    const std::vector<Tensor> back = split(rows, 0, {1, 1});
    CHECK(sum(back[0]).item() == 3e8);
    CHECK(sum(back[1]).item() == 6e8);
  }
  {
    const Tensor a = concat({ones, ones}, 0), b = concat({twos, twos}, 0);  // [2, 300M] each
    const Tensor wide = concat({a, b}, 1);                                   // [2, 600M]
    CHECK(sum(wide).item() == 1.8e9);
    const std::vector<Tensor> back = split(wide, 1, {half, half});
    CHECK(sum(back[0]).item() == 6e8);
    CHECK(sum(back[1]).item() == 1.2e9);
  }
}
