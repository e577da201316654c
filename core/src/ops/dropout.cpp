// Inverted dropout, forward and backward.
#include "attnlab/ops/dropout.h"

#include <cmath>

#include "attnlab/autograd.h"
#include "dispatch.h"
#include "ops/dropout_kernels.h"
#include "ops/op_util.h"

namespace attnlab {
namespace {

// y_i = m_i x_i / (1 - p) with m_i = [u_i >= p] a constant of (seed, offset, i), so
// dy_i/dx_j = [i == j] m_i / (1 - p) and dx = m * dy / (1 - p): the forward map applied to dy.
// The mask is regenerated from (seed, offset) instead of being stored.
class DropoutNode final : public Node {
 public:
  DropoutNode(double p, philox::SeedRef seed, std::uint64_t offset) : p_(p), seed_(seed), offset_(offset) {}
  std::vector<Tensor> backward(std::vector<Tensor>& grads) override {
    const Tensor dy = detail::grad_or_zeros(grads, 0, output_shapes[0], output_dtypes[0], device);
    Tensor dx = Tensor::empty_like(dy);
    ATTNLAB_DISPATCH(dy.device(), detail::dropout_backward, dy, p_, seed_, offset_, dx);
    return {dx};
  }
  std::string_view name() const override { return "dropout"; }

 private:
  double p_;
  philox::SeedRef seed_;  // a slot is read again by the backward's kernel
  std::uint64_t offset_;
};

void check_p(double p) {
  ATTNLAB_CHECK(std::isfinite(p) && p >= 0.0 && p < 1.0, "dropout: p must be in [0, 1), got p = {}", p);
}

}  // namespace

Tensor dropout(const Tensor& x, double p, std::uint64_t seed, std::uint64_t offset) {
  return dropout(x, p, philox::SeedRef{seed, nullptr}, offset);
}

Tensor dropout(const Tensor& x, double p, philox::SeedRef seed, std::uint64_t offset) {
  detail::check_defined("dropout", x, "x");
  detail::check_floating("dropout", x);
  check_p(p);
  if (p == 0.0) return x;
  Tensor y = Tensor::empty_like(x);
  ATTNLAB_DISPATCH(x.device(), detail::dropout_forward, x, p, seed, offset, y);
  if (any_requires_grad({&x})) record(std::make_shared<DropoutNode>(p, seed, offset), {&x}, y);
  return y;
}

Tensor dropout(const Tensor& x, double p, Generator& generator) {
  detail::check_defined("dropout", x, "x");
  check_p(p);
  // The generator advances by the tensor's size even for p == 0, so that the stream positions of
  // later draws do not depend on p.
  const Generator::Draw draw = generator.reserve(static_cast<std::uint64_t>(x.numel()));
  return dropout(x, p, draw.seed_on(x.device()), draw.offset);
}

}  // namespace attnlab
