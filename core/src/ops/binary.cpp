// add, sub, mul with bias broadcasting; scale; add_inplace.
#include "attnlab/ops/binary.h"

#include "attnlab/autograd.h"
#include "dispatch.h"
#include "ops/binary_kernels.h"
#include "ops/op_util.h"

namespace attnlab {
namespace detail {

// The gradient of a broadcast input: the output gradient summed over the axes the input was
// repeated along (its leading rows), reshaped to the input's shape.
Tensor sum_to_shape(const Tensor& grad, const Shape& shape) {
  if (grad.shape() == shape) return grad;
  Tensor out = Tensor::empty(shape, grad.dtype(), grad.device());
  ATTNLAB_DISPATCH(grad.device(), sum_rows, grad, out);
  return out;
}

}  // namespace detail

namespace {

using detail::BinaryOp;

// Broadcast rule: equal shapes, a one-element side, or one shape a suffix of the other (after
// dropping its leading 1s). Returns the output shape.
Shape broadcast_shape(BinaryOp op, const Tensor& a, const Tensor& b) {
  const auto name = detail::kBinaryOpNames[static_cast<std::size_t>(op)];
  const Shape& sa = a.shape();
  const Shape& sb = b.shape();
  if (sa == sb) return sa;
  auto squeeze = [](const Shape& s) {
    std::vector<std::int64_t> d = s.dims();
    while (!d.empty() && d.front() == 1) d.erase(d.begin());
    return Shape(std::move(d));
  };
  if (sb.numel() == 1 || sa.ends_with(squeeze(sb))) {
    if (sa.rank() >= sb.rank()) return sa;
  }
  if (sa.numel() == 1 || sb.ends_with(squeeze(sa))) {
    if (sb.rank() >= sa.rank()) return sb;
  }
  throw Error(fmt::format("{}: shapes {} and {} do not broadcast (one must be a suffix of the other)",
                          name, sa.str(), sb.str()));
}

class BinaryNode final : public Node {
 public:
  BinaryNode(BinaryOp op, const Tensor& a, const Tensor& b)
      : op_(op), a_shape_(a.shape()), b_shape_(b.shape()) {
    if (op == BinaryOp::mul) {  // mul needs the other factor
      if (b.requires_grad()) a_ = a.detach();
      if (a.requires_grad()) b_ = b.detach();
    }
  }
  // add: da = g, db = g; sub: da = g, db = -g; mul: da = g * b, db = g * a; each summed back
  // over the axes its input was broadcast along.
  std::vector<Tensor> backward(std::vector<Tensor>& grads) override {
    const Tensor& g = grads[0];
    Tensor ga, gb;
    if (next[0].node) {
      ga = detail::sum_to_shape(op_ == BinaryOp::mul ? mul(g, b_) : g, a_shape_);
    }
    if (next[1].node) {
      Tensor full = op_ == BinaryOp::mul ? mul(g, a_) : op_ == BinaryOp::sub ? scale(g, -1.0) : g;
      gb = detail::sum_to_shape(full, b_shape_);
    }
    return {ga, gb};
  }
  void release() override { a_ = b_ = Tensor(); }
  std::string_view name() const override { return detail::kBinaryOpNames[static_cast<std::size_t>(op_)]; }

 private:
  BinaryOp op_;
  Shape a_shape_, b_shape_;
  Tensor a_, b_;
};

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b) {
  const auto name = detail::kBinaryOpNames[static_cast<std::size_t>(op)];
  detail::check_float_operands(name, a, "a", b, "b");
  Tensor out = Tensor::empty(broadcast_shape(op, a, b), a.dtype(), a.device());
  ATTNLAB_DISPATCH(a.device(), detail::binary_forward, op, a, b, out);
  if (any_requires_grad({&a, &b})) record(std::make_shared<BinaryNode>(op, a, b), {&a, &b}, out);
  return out;
}

class ScaleNode final : public Node {
 public:
  explicit ScaleNode(double factor) : factor_(factor) {}
  // d(f x)/dx = f.
  std::vector<Tensor> backward(std::vector<Tensor>& grads) override { return {scale(grads[0], factor_)}; }
  std::string_view name() const override { return "scale"; }

 private:
  double factor_;
};

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) { return binary(BinaryOp::add, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary(BinaryOp::sub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary(BinaryOp::mul, a, b); }

Tensor scale(const Tensor& x, double factor) {
  detail::check_defined("scale", x, "x");
  detail::check_floating("scale", x);
  Tensor out = Tensor::empty_like(x);
  ATTNLAB_DISPATCH(x.device(), detail::scale_forward, x, factor, out);
  if (any_requires_grad({&x})) record(std::make_shared<ScaleNode>(factor), {&x}, out);
  return out;
}

void add_inplace(Tensor& dst, const Tensor& src) {
  detail::check_same_device("add_inplace", dst, src);
  detail::check_same_dtype("add_inplace", dst, src);
  detail::check_same_shape("add_inplace", dst, src);
  ATTNLAB_DISPATCH(dst.device(), detail::add_inplace, dst, src);
}

}  // namespace attnlab
