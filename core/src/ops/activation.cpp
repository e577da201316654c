// relu, gelu, tanh and silu, forward and backward.
#include "attnlab/ops/activation.h"

#include "attnlab/autograd.h"
#include "dispatch.h"
#include "ops/activation_kernels.h"
#include "ops/op_util.h"

namespace attnlab {
namespace {

using detail::Activation;

// Every activation differentiates pointwise from the saved input: dx = dy * f'(x).
class ActivationNode final : public Node {
 public:
  ActivationNode(Activation kind, const Tensor& x) : kind_(kind), x_(x.detach()) {}
  std::vector<Tensor> backward(std::vector<Tensor>& grads) override {
    Tensor dx = Tensor::empty_like(x_);
    ATTNLAB_DISPATCH(x_.device(), detail::activation_backward, kind_, x_, grads[0], dx);
    return {dx};
  }
  void release() override { x_ = Tensor(); }
  std::string_view name() const override {
    return detail::kActivationNames[static_cast<std::size_t>(kind_)];
  }

 private:
  Activation kind_;
  Tensor x_;
};

Tensor activate(Activation kind, const Tensor& x) {
  const auto name = detail::kActivationNames[static_cast<std::size_t>(kind)];
  detail::check_defined(name, x, "x");
  detail::check_floating(name, x);
  Tensor y = Tensor::empty_like(x);
  ATTNLAB_DISPATCH(x.device(), detail::activation_forward, kind, x, y);
  if (any_requires_grad({&x})) record(std::make_shared<ActivationNode>(kind, x), {&x}, y);
  return y;
}

}  // namespace

Tensor relu(const Tensor& x) { return activate(Activation::relu, x); }
Tensor gelu(const Tensor& x) { return activate(Activation::gelu, x); }
Tensor tanh(const Tensor& x) { return activate(Activation::tanh, x); }
Tensor silu(const Tensor& x) { return activate(Activation::silu, x); }

}  // namespace attnlab
