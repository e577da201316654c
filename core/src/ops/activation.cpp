// relu and gelu, forward and backward.
#include "attnlab/ops/activation.h"

#include "attnlab/autograd.h"
#include "dispatch.h"
#include "ops/activation_kernels.h"
#include "ops/op_util.h"

namespace attnlab {
namespace {

// Both activations differentiate pointwise from the saved input: dx = dy * f'(x).
class ActivationNode final : public Node {
 public:
  ActivationNode(bool is_gelu, const Tensor& x) : is_gelu_(is_gelu), x_(x.detach()) {}
  std::vector<Tensor> backward(std::vector<Tensor>& grads) override {
    Tensor dx = Tensor::empty_like(x_);
    if (is_gelu_)
      ATTNLAB_DISPATCH_CPU(x_.device(), detail::gelu_backward, x_, grads[0], dx);
    else
      ATTNLAB_DISPATCH_CPU(x_.device(), detail::relu_backward, x_, grads[0], dx);
    return {dx};
  }
  void release() override { x_ = Tensor(); }
  std::string_view name() const override { return is_gelu_ ? "gelu" : "relu"; }

 private:
  bool is_gelu_;
  Tensor x_;
};

}  // namespace

Tensor relu(const Tensor& x) {
  detail::check_defined("relu", x, "x");
  detail::check_floating("relu", x);
  Tensor y = Tensor::empty_like(x);
  ATTNLAB_DISPATCH_CPU(x.device(), detail::relu_forward, x, y);
  if (any_requires_grad({&x})) record(std::make_shared<ActivationNode>(false, x), {&x}, y);
  return y;
}

Tensor gelu(const Tensor& x) {
  detail::check_defined("gelu", x, "x");
  detail::check_floating("gelu", x);
  Tensor y = Tensor::empty_like(x);
  ATTNLAB_DISPATCH_CPU(x.device(), detail::gelu_forward, x, y);
  if (any_requires_grad({&x})) record(std::make_shared<ActivationNode>(true, x), {&x}, y);
  return y;
}

}  // namespace attnlab
