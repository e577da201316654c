// sum and mean, over all elements or along one axis.
#include "attnlab/ops/reduce.h"

#include "attnlab/autograd.h"
#include "dispatch.h"
#include "ops/op_util.h"
#include "ops/reduce_kernels.h"

namespace attnlab {
namespace {

// x viewed as [outer, n, inner] with the reduced extent n in the middle.
struct ReduceView {
  std::int64_t outer = 1, n = 1, inner = 1;
};

// y[o, j] = c * sum_k x[o, k, j] (c = 1 for sum, 1/n for mean) is linear with
// dy[o, j] / dx[o, k, j] = c for every k, so the vector-Jacobian product broadcasts the gradient
// back over the reduced axis: dx[o, k, j] = c * dy[o, j]. keepdim changes only the shape of y,
// not its row-major layout, so the same [outer, inner] view of dy serves both.
class ReduceNode final : public Node {
 public:
  ReduceNode(std::string_view op, Shape input_shape, ReduceView view, double scale)
      : op_(op), input_shape_(std::move(input_shape)), view_(view), scale_(scale) {}
  std::vector<Tensor> backward(std::vector<Tensor>& grads) override {
    const Tensor& g = grads[0];
    if (!g.defined()) return {Tensor()};
    Tensor dx = Tensor::empty(input_shape_, g.dtype(), g.device());
    ATTNLAB_DISPATCH(g.device(), detail::reduce_sum_backward, op_, g, view_.outer, view_.n,
                         view_.inner, scale_, dx);
    return {dx};
  }
  std::string_view name() const override { return op_; }

 private:
  std::string_view op_;  // a string literal
  Shape input_shape_;
  ReduceView view_;
  double scale_;
};

Tensor reduce(std::string_view op, const Tensor& x, const ReduceView& view, const Shape& out_shape,
              bool is_mean) {
  const double scale = is_mean ? 1.0 / static_cast<double>(view.n) : 1.0;
  Tensor out = Tensor::empty(out_shape, x.dtype(), x.device());
  ATTNLAB_DISPATCH(x.device(), detail::reduce_sum, op, x, view.outer, view.n, view.inner, scale,
                       out);
  if (any_requires_grad({&x})) record(std::make_shared<ReduceNode>(op, x.shape(), view, scale), {&x}, out);
  return out;
}

Tensor reduce_all(std::string_view op, const Tensor& x, bool is_mean) {
  detail::check_defined(op, x, "x");
  detail::check_floating(op, x);
  return reduce(op, x, ReduceView{1, x.numel(), 1}, Shape{}, is_mean);
}

Tensor reduce_axis(std::string_view op, const Tensor& x, int axis, bool keepdim, bool is_mean) {
  detail::check_defined(op, x, "x");
  detail::check_floating(op, x);
  const Shape& shape = x.shape();
  const int r = shape.rank();
  const int a = axis < 0 ? axis + r : axis;
  ATTNLAB_CHECK(a >= 0 && a < r, "{}: axis {} is out of range for shape {}", op, axis, shape.str());
  std::vector<std::int64_t> dims = shape.dims();
  if (keepdim)
    dims[static_cast<std::size_t>(a)] = 1;
  else
    dims.erase(dims.begin() + a);
  return reduce(op, x, ReduceView{shape.outer(a), shape[a], shape.inner(a + 1)}, Shape(std::move(dims)),
                is_mean);
}

}  // namespace

Tensor sum(const Tensor& x) { return reduce_all("sum", x, false); }
Tensor mean(const Tensor& x) { return reduce_all("mean", x, true); }
Tensor sum(const Tensor& x, int axis, bool keepdim) { return reduce_axis("sum", x, axis, keepdim, false); }
Tensor mean(const Tensor& x, int axis, bool keepdim) { return reduce_axis("mean", x, axis, keepdim, true); }

}  // namespace attnlab
