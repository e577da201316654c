// permute, transpose, split, concat: new contiguous tensors with the axes rearranged. They move
// bytes only, so every dtype is accepted (ids, bf16, ...); gradients flow for floating inputs.
#include "attnlab/ops/shape_ops.h"

#include <fmt/ranges.h>

#include "attnlab/autograd.h"
#include "dispatch.h"
#include "ops/op_util.h"
#include "ops/shape_ops_kernels.h"

namespace attnlab {
namespace {

int checked_axis(std::string_view op, const Shape& shape, int axis) {
  const int r = shape.rank();
  const int a = axis < 0 ? axis + r : axis;
  ATTNLAB_CHECK(a >= 0 && a < r, "{}: axis {} is out of range for shape {}", op, axis, shape.str());
  return a;
}

// Normalized dims, or an Error naming the op, the dims and the shape.
std::vector<int> checked_permutation(std::string_view op, const Shape& shape, const std::vector<int>& dims) {
  const int r = shape.rank();
  std::vector<int> out;
  std::vector<bool> seen(static_cast<std::size_t>(r), false);
  bool ok = static_cast<int>(dims.size()) == r;
  for (std::size_t i = 0; ok && i < dims.size(); ++i) {
    const int a = dims[i] < 0 ? dims[i] + r : dims[i];
    if (a < 0 || a >= r || seen[static_cast<std::size_t>(a)]) {
      ok = false;
      break;
    }
    seen[static_cast<std::size_t>(a)] = true;
    out.push_back(a);
  }
  ATTNLAB_CHECK(ok, "{}: dims [{}] are not a permutation of the {} axes of shape {}", op,
                fmt::join(dims, ", "), r, shape.str());
  return out;
}

// y = P x moves element x[i_0..i_{n-1}] to y[i_{dims[0]}..i_{dims[n-1]}]: a linear map that only
// reorders values, so its Jacobian is a permutation matrix and the vector-Jacobian product is
// the inverse reordering: dx = permute(dy, inverse) with inverse[dims[k]] = k.
class PermuteNode final : public Node {
 public:
  explicit PermuteNode(const std::vector<int>& dims) : inverse_(dims.size()) {
    for (std::size_t k = 0; k < dims.size(); ++k) inverse_[static_cast<std::size_t>(dims[k])] = static_cast<int>(k);
  }
  std::vector<Tensor> backward(std::vector<Tensor>& grads) override {
    if (!grads[0].defined()) return {Tensor()};
    return {permute(grads[0], inverse_)};
  }
  std::string_view name() const override { return "permute"; }

 private:
  std::vector<int> inverse_;
};

// split: piece p is the slice [o_p, o_p + s_p) of x along the axis, so x's gradient is the piece
// gradients laid side by side again: dx = concat(dy_0, ..., dy_{n-1}), a missing dy_p being
// zeros (that piece did not reach the loss).
class SplitNode final : public Node {
 public:
  explicit SplitNode(int axis) : axis_(axis) {}
  std::vector<Tensor> backward(std::vector<Tensor>& grads) override {
    bool any = false;
    for (const Tensor& g : grads) any = any || g.defined();
    if (!any) return {Tensor()};
    std::vector<Tensor> pieces;
    for (std::size_t i = 0; i < output_shapes.size(); ++i)
      pieces.push_back(detail::grad_or_zeros(grads, i, output_shapes[i], output_dtypes[i], device));
    return {concat(pieces, axis_)};
  }
  std::string_view name() const override { return "split"; }

 private:
  int axis_;
};

// concat: the adjoint of split. Part p occupies [o_p, o_p + s_p) of the output along the axis,
// so its gradient is that slice of dy: dparts = split(dy, axis, sizes).
class ConcatNode final : public Node {
 public:
  ConcatNode(int axis, std::vector<std::int64_t> sizes) : axis_(axis), sizes_(std::move(sizes)) {}
  std::vector<Tensor> backward(std::vector<Tensor>& grads) override {
    std::vector<Tensor> out(sizes_.size());
    if (!grads[0].defined()) return out;
    std::vector<Tensor> pieces = split(grads[0], axis_, sizes_);
    for (std::size_t i = 0; i < sizes_.size(); ++i)
      if (next[i].node) out[i] = std::move(pieces[i]);
    return out;
  }
  std::string_view name() const override { return "concat"; }

 private:
  int axis_;
  std::vector<std::int64_t> sizes_;
};

}  // namespace

Tensor permute(const Tensor& x, const std::vector<int>& dims) {
  detail::check_defined("permute", x, "x");
  const std::vector<int> perm = checked_permutation("permute", x.shape(), dims);
  std::vector<std::int64_t> out_dims;
  for (int d : perm) out_dims.push_back(x.shape()[d]);
  Tensor out = Tensor::empty(Shape(std::move(out_dims)), x.dtype(), x.device());
  ATTNLAB_DISPATCH(x.device(), detail::permute, x, perm, out);
  if (any_requires_grad({&x})) record(std::make_shared<PermuteNode>(perm), {&x}, out);
  return out;
}

Tensor transpose(const Tensor& x, int axis0, int axis1) {
  detail::check_defined("transpose", x, "x");
  const int a = checked_axis("transpose", x.shape(), axis0);
  const int b = checked_axis("transpose", x.shape(), axis1);
  std::vector<int> dims(static_cast<std::size_t>(x.rank()));
  for (int i = 0; i < x.rank(); ++i) dims[static_cast<std::size_t>(i)] = i;
  std::swap(dims[static_cast<std::size_t>(a)], dims[static_cast<std::size_t>(b)]);
  return permute(x, dims);
}

std::vector<Tensor> split(const Tensor& x, int axis, const std::vector<std::int64_t>& sizes) {
  detail::check_defined("split", x, "x");
  const int a = checked_axis("split", x.shape(), axis);
  std::int64_t total = 0;
  bool nonnegative = true;
  for (auto s : sizes) {
    nonnegative = nonnegative && s >= 0;
    total += s;
  }
  ATTNLAB_CHECK(nonnegative && total == x.dim(a),
                "split: sizes [{}] must be non-negative and sum to {}, the extent of axis {} of shape {}",
                fmt::join(sizes, ", "), x.dim(a), axis, x.shape().str());
  std::vector<Tensor> outs;
  for (auto s : sizes) {
    Shape piece = x.shape();
    piece[a] = s;
    outs.push_back(Tensor::empty(piece, x.dtype(), x.device()));
  }
  if (outs.empty()) return outs;
  ATTNLAB_DISPATCH(x.device(), detail::split, x, a, outs);
  if (any_requires_grad({&x})) {
    std::vector<Tensor*> out_ptrs;
    for (Tensor& o : outs) out_ptrs.push_back(&o);
    record(std::make_shared<SplitNode>(a), {&x}, out_ptrs);
  }
  return outs;
}

Tensor concat(const std::vector<Tensor>& parts, int axis) {
  ATTNLAB_CHECK(!parts.empty(), "concat: empty list of tensors (axis {})", axis);
  for (std::size_t i = 0; i < parts.size(); ++i)
    detail::check_defined("concat", parts[i], fmt::format("part {}", i));
  const Tensor& first = parts[0];
  const int a = checked_axis("concat", first.shape(), axis);
  std::vector<std::int64_t> sizes;
  std::int64_t total = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const Tensor& p = parts[i];
    detail::check_same_device("concat", first, p);
    detail::check_same_dtype("concat", first, p);
    bool match = p.rank() == first.rank();
    for (int d = 0; match && d < first.rank(); ++d) match = d == a || p.dim(d) == first.dim(d);
    ATTNLAB_CHECK(match,
                  "concat: part {} has shape {} but part 0 has shape {}; all extents but axis {} must "
                  "agree",
                  i, p.shape().str(), first.shape().str(), axis);
    sizes.push_back(p.dim(a));
    total += p.dim(a);
  }
  Shape out_shape = first.shape();
  out_shape[a] = total;
  Tensor out = Tensor::empty(out_shape, first.dtype(), first.device());
  ATTNLAB_DISPATCH(first.device(), detail::concat, parts, a, out);
  if (any_requires_grad(parts)) {
    std::vector<const Tensor*> in_ptrs;
    for (const Tensor& p : parts) in_ptrs.push_back(&p);
    record(std::make_shared<ConcatNode>(a, std::move(sizes)), in_ptrs, {&out});
  }
  return out;
}

}  // namespace attnlab
