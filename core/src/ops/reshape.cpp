// Tensor::reshape: a view over the same storage; the backward reshapes the gradient back.
#include "attnlab/autograd.h"
#include "attnlab/tensor.h"

namespace attnlab {
namespace {

class ReshapeNode final : public Node {
 public:
  explicit ReshapeNode(Shape input_shape) : input_shape_(std::move(input_shape)) {}
  // d/dx reshape(x) is the identity on the values: only the shape changes back.
  std::vector<Tensor> backward(std::vector<Tensor>& grads) override {
    if (!grads[0].defined()) return {Tensor()};
    return {grads[0].reshape(input_shape_)};
  }
  std::string_view name() const override { return "reshape"; }

 private:
  Shape input_shape_;
};

Shape infer_shape(const Shape& from, const Shape& to) {
  std::vector<std::int64_t> dims = to.dims();
  int unknown = -1;
  std::int64_t known = 1;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      ATTNLAB_CHECK(unknown < 0, "reshape {} -> {}: more than one -1", from.str(), to.str());
      unknown = static_cast<int>(i);
    } else {
      known *= dims[i];
    }
  }
  if (unknown >= 0) {
    ATTNLAB_CHECK(known > 0 && from.numel() % known == 0, "reshape {} -> {}: cannot infer the -1",
                  from.str(), to.str());
    dims[static_cast<std::size_t>(unknown)] = from.numel() / known;
  }
  Shape result(std::move(dims));
  ATTNLAB_CHECK(result.numel() == from.numel(), "reshape {} -> {}: {} elements cannot become {}",
                from.str(), to.str(), from.numel(), result.numel());
  return result;
}

}  // namespace

Tensor Tensor::reshape(const Shape& new_shape) const {
  ATTNLAB_CHECK(defined(), "reshape of an undefined tensor");
  // Shape's constructor rejects negative extents, so -1 arrives through the raw dims.
  Tensor out = detach();
  out.impl_->shape = infer_shape(shape(), new_shape);
  if (any_requires_grad({this})) record(std::make_shared<ReshapeNode>(shape()), {this}, out);
  return out;
}

}  // namespace attnlab
