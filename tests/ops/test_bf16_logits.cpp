// bf16 logits: matmul's bf16_out under bf16 precision (the f32 sums rounded once to bf16) and
// cross_entropy reading bf16 logits (in f32, as their widening) with a bf16 gradient (the f32
// gradient rounded once). Each is held to the f32 path it replaces.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "attnlab/attnlab.h"
#include "attnlab/precision.h"
#include "cpu/bf16_gemm.h"
#include "support/tensor_testing.h"

using namespace attnlab;
using testing::random_ids;
using testing::random_tensor;

namespace {

std::vector<std::uint16_t> bits_of(const Tensor& t) {
  REQUIRE(t.dtype() == DType::bf16);
  std::vector<std::uint16_t> out(static_cast<std::size_t>(t.numel()));
  const bf16* p = t.data<bf16>();
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = p[i].bits;
  return out;
}

// The largest distance between two bf16 tensors of one sign pattern, in units in the last place
// (adjacent bf16 values of one sign have adjacent bit patterns).
int max_ulps(const Tensor& a, const Tensor& b) {
  const auto x = bits_of(a), y = bits_of(b);
  REQUIRE(x.size() == y.size());
  int worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if ((x[i] ^ y[i]) & 0x8000u) return 1 << 16;  // signs differ
    worst = std::max(worst, std::abs(static_cast<int>(x[i]) - static_cast<int>(y[i])));
  }
  return worst;
}

Tensor leaf(const Shape& shape, std::uint64_t seed, double half_width = 1.0) {
  Tensor t = random_tensor(shape, seed, -half_width, half_width, DType::f32);
  t.set_requires_grad();
  return t;
}

}  // namespace

TEST_CASE("matmul's bf16_out is the f32 product rounded once, with the same gradients") {
  const PrecisionGuard guard(Precision::bf16);
  // The logits' product: hidden [N, d] times the embedding [V, d] transposed.
  Tensor h = leaf({37, 24}, 1), e = leaf({53, 24}, 2, 3.0);
  const Tensor wide = matmul(h, e, false, true);
  const Tensor narrow = matmul(h, e, false, true, true);
  REQUIRE(wide.dtype() == DType::f32);
  REQUIRE(narrow.dtype() == DType::bf16);
  CHECK(narrow.shape() == wide.shape());
  // oneDNN's bf16 output may sum in another order than its f32 one: within one bf16 step of the
  // f32 product's rounding; the widening path rounds the same f32 product: bit for bit.
  const int ulps = max_ulps(narrow, wide.to(DType::bf16));
  MESSAGE("bf16 out against the rounded f32 out: " << ulps << " ulp (oneDNN: " << cpu::bf16_gemm_available()
                                                    << ")");
  CHECK(ulps <= (cpu::bf16_gemm_available() ? 1 : 0));
  ::setenv("ATTNLAB_NO_HOST_BF16", "1", 1);
  const Tensor widened = matmul(h, e, false, true, true);
  ::unsetenv("ATTNLAB_NO_HOST_BF16");
  CHECK(bits_of(widened) == bits_of(matmul(h, e, false, true).to(DType::bf16)));
  // An empty inner extent: zeros.
  const Tensor none = matmul(Tensor::zeros({3, 0}), Tensor::zeros({4, 0}), false, true, true);
  CHECK(none.dtype() == DType::bf16);
  CHECK(none.to(DType::f32).to_vector<float>() == std::vector<float>(12, 0.0f));
  // A batch with a transposed left factor takes the widening path too.
  Tensor a = leaf({3, 16, 5}, 3), b = leaf({3, 16, 7}, 4);
  CHECK(bits_of(matmul(a, b, true, false, true)) == bits_of(matmul(a, b, true, false).to(DType::bf16)));

  // The gradient of the bf16 output arrives in bf16; the f32 output's is cast to bf16 for the
  // backward products: given the same bf16 values, the same input gradients.
  const Tensor g = random_tensor(wide.shape(), 5, -1, 1, DType::f32).to(DType::bf16);
  matmul(h, e, false, true, true).backward(g);
  const Tensor gh = h.grad().clone(), ge = e.grad().clone();
  CHECK(gh.dtype() == DType::f32);
  CHECK(ge.dtype() == DType::f32);
  h.zero_grad();
  e.zero_grad();
  matmul(h, e, false, true).backward(g.to(DType::f32));
  CHECK(gh.to_vector<float>() == h.grad().to_vector<float>());
  CHECK(ge.to_vector<float>() == e.grad().to_vector<float>());
}

TEST_CASE("matmul's bf16_out changes nothing outside bf16 precision") {
  const Tensor a = random_tensor({4, 6}, 6, -1, 1, DType::f32), b = random_tensor({6, 3}, 7, -1, 1, DType::f32);
  for (Precision p : {Precision::fp32, Precision::tf32}) {
    const PrecisionGuard guard(p);
    const Tensor y = matmul(a, b, false, false, true);
    CHECK(y.dtype() == DType::f32);
    CHECK(y.to_vector<float>() == matmul(a, b).to_vector<float>());
  }
  const PrecisionGuard guard(Precision::bf16);
  const Tensor a64 = a.to(DType::f64), b64 = b.to(DType::f64);
  CHECK(matmul(a64, b64, false, false, true).dtype() == DType::f64);  // f64 stays exact
}

TEST_CASE("cross_entropy of bf16 logits is that of their f32 widening, its gradient rounded once") {
  for (double eps : {0.0, 0.1}) {
    CAPTURE(eps);
    // Logits as a trained model has them (a few units wide), one row ignored, a vocabulary that is
    // not a multiple of the vector width.
    Tensor x = random_tensor({9, 131}, 8, -6, 6, DType::f32).to(DType::bf16);
    x.set_requires_grad();
    Tensor wide = x.detach().to(DType::f32);
    wide.set_requires_grad();
    const Tensor targets = Tensor::from_vector<std::int64_t>({9}, {3, 0, 130, -1, 64, 7, 7, 100, 1});
    const auto narrow_ce = cross_entropy(x, targets, eps, -1);
    const auto wide_ce = cross_entropy(wide, targets, eps, -1);
    REQUIRE(narrow_ce.loss_sum.dtype() == DType::f32);
    CHECK(narrow_ce.loss_sum.item() == wide_ce.loss_sum.item());
    CHECK(narrow_ce.tokens.item() == 8);
    scale(narrow_ce.loss_sum, 0.37).backward();
    scale(wide_ce.loss_sum, 0.37).backward();
    REQUIRE(x.grad().dtype() == DType::bf16);
    CHECK(bits_of(x.grad()) == bits_of(wide.grad().to(DType::bf16)));
    // The ignored row's gradient is zero, the others are not.
    const auto g = x.grad().to(DType::f32).to_vector<float>();
    for (int k = 0; k < 131; ++k) CHECK(g[static_cast<std::size_t>(3 * 131 + k)] == 0.0f);
    CHECK(g[0] != 0.0f);
  }
}

TEST_CASE("bf16 logits through the model's projection: the loss and gradients stay close to f32 logits") {
  // What the trainer does: logits = h E^T in bf16, cross_entropy, backward. Against f32 logits,
  // the loss moves by the logits' rounding only (about 2^-9 of their size) and the gradients by
  // the same relative amount.
  Tensor h = leaf({64, 32}, 9), e = leaf({211, 32}, 10, 0.5);
  const Tensor targets = random_ids({64}, 11, 211);
  const PrecisionGuard guard(Precision::bf16);
  double loss[2];
  std::vector<float> grad[2];
  for (int narrow = 0; narrow < 2; ++narrow) {
    h.zero_grad();
    e.zero_grad();
    const Tensor logits = matmul(h, e, false, true, narrow == 1);
    const auto ce = cross_entropy(logits, targets, 0.1, -1);
    scale(ce.loss_sum, 1.0 / 64).backward();
    loss[narrow] = ce.loss_sum.item() / 64;
    grad[narrow] = e.grad().to_vector<float>();
  }
  MESSAGE("loss per token with f32 logits " << loss[0] << ", with bf16 logits " << loss[1]);
  CHECK(std::abs(loss[1] - loss[0]) < 1e-3 * std::abs(loss[0]));
  CHECK(loss[1] != loss[0]);  // the logits are rounded: the path is taken
  double num = 0, den = 0;
  for (std::size_t i = 0; i < grad[0].size(); ++i) {
    num += std::pow(static_cast<double>(grad[1][i]) - grad[0][i], 2);
    den += std::pow(static_cast<double>(grad[0][i]), 2);
  }
  MESSAGE("relative difference of the embedding's gradient: " << std::sqrt(num / den));
  CHECK(std::sqrt(num / den) < 1e-2);
}
