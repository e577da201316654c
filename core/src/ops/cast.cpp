// cast: Tensor::to(DType) recorded for autodiff (the conversion kernels are transfer_cpu.cpp and
// cuda/convert.cu).
#include "attnlab/ops/cast.h"

#include "attnlab/autograd.h"
#include "ops/cast_node.h"
#include "ops/op_util.h"

namespace attnlab {
namespace {

// y = round(x) in another dtype: dx = dy converted back to x's dtype.
class CastNode final : public Node {
 public:
  explicit CastNode(DType input_dtype) : input_dtype_(input_dtype) {}
  std::vector<Tensor> backward(std::vector<Tensor>& grads) override {
    const Tensor g = detail::grad_or_zeros(grads, 0, output_shapes[0], output_dtypes[0], device);
    return {g.to(input_dtype_)};
  }
  std::string_view name() const override { return "cast"; }

 private:
  DType input_dtype_;
};

}  // namespace

namespace detail {

Tensor cast_from_copy(const Tensor& x, const Tensor& copy) {
  Tensor y = copy.detach();  // its own place on the tape; the copy itself stays off it
  if (any_requires_grad({&x})) record(std::make_shared<CastNode>(x.dtype()), {&x}, y);
  return y;
}

}  // namespace detail

Tensor cast(const Tensor& x, DType dtype) {
  detail::check_defined("cast", x, "x");
  if (x.dtype() == dtype) return x;
  ATTNLAB_CHECK(!x.requires_grad() || dtype_is_floating(dtype),
                "cast: {} requires a gradient, so it can only be cast to a floating dtype (f32, f64, bf16), not {}",
                x.str(), dtype_name(dtype));
  Tensor y = x.to(dtype);
  if (any_requires_grad({&x})) record(std::make_shared<CastNode>(x.dtype()), {&x}, y);
  return y;
}

}  // namespace attnlab
