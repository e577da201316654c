// Embedding lookup, forward and backward.
#include "attnlab/ops/embedding.h"

#include "attnlab/autograd.h"
#include "dispatch.h"
#include "ops/embedding_kernels.h"
#include "ops/op_util.h"

namespace attnlab {
namespace {

// out[n, j] = W[ids[n], j], so d out[n, j] / d W[r, k] = [ids[n] == r][j == k] and
// dW[r, :] = sum_{n : ids[n] == r} dout[n, :]: a scatter-add of the output gradient rows into a
// zero [V, D] tensor, where repeated ids accumulate. The ids are integers and get no gradient.
class EmbeddingNode final : public Node {
 public:
  EmbeddingNode(const Tensor& weight, const Tensor& ids) : weight_shape_(weight.shape()), ids_(ids.detach()) {}
  std::vector<Tensor> backward(std::vector<Tensor>& grads) override {
    const Tensor dout = detail::grad_or_zeros(grads, 0, output_shapes[0], output_dtypes[0], device);
    Tensor dweight = Tensor::empty(weight_shape_, dout.dtype(), dout.device());
    ATTNLAB_DISPATCH(dout.device(), detail::embedding_backward, dout, ids_, dweight);
    return {dweight, Tensor()};
  }
  void release() override { ids_ = Tensor(); }
  std::string_view name() const override { return "embedding"; }

 private:
  Shape weight_shape_;
  Tensor ids_;
};

}  // namespace

Tensor embedding(const Tensor& weight, const Tensor& ids) {
  detail::check_defined("embedding", weight, "weight");
  detail::check_defined("embedding", ids, "ids");
  detail::check_floating("embedding", weight);
  detail::check_index_dtype("embedding", ids);
  detail::check_same_device("embedding", weight, ids);
  ATTNLAB_CHECK(weight.rank() == 2, "embedding: weight must be [V, D], got {}", weight.shape().str());
  ATTNLAB_DISPATCH(ids.device(), detail::embedding_check_ids, ids, weight.dim(0));
  std::vector<std::int64_t> dims = ids.shape().dims();
  dims.push_back(weight.dim(1));
  Tensor out = Tensor::empty(Shape(std::move(dims)), weight.dtype(), weight.device());
  ATTNLAB_DISPATCH(weight.device(), detail::embedding_forward, weight, ids, out);
  if (any_requires_grad({&weight})) record(std::make_shared<EmbeddingNode>(weight, ids), {&weight, &ids}, out);
  return out;
}

Tensor select_rows(const Tensor& x, const std::vector<std::int64_t>& rows) {
  ATTNLAB_CHECK(x.defined() && x.rank() >= 1, "select_rows: x must have at least one axis, got {}", x.str());
  const std::int64_t n = x.dim(0);
  const std::int64_t rest = n == 0 ? 0 : x.numel() / n;
  Tensor ids = Tensor::from_vector<std::int64_t>({static_cast<std::int64_t>(rows.size())}, rows).to(x.device());
  Shape shape = x.shape();
  shape[0] = static_cast<std::int64_t>(rows.size());
  return embedding(x.reshape({n, rest}), ids).reshape(shape);
}

}  // namespace attnlab
