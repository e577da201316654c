// The symmetric KL divergence of two predictions, forward and backward (symmetric_kl.h).
#include "attnlab/ops/symmetric_kl.h"

#include <vector>

#include "attnlab/autograd.h"
#include "attnlab/ops/binary.h"
#include "attnlab/ops/index_mask.h"
#include "attnlab/ops/reduce.h"
#include "attnlab/ops/softmax.h"
#include "ops/op_util.h"
#include "ops/symmetric_kl_kernels.h"

namespace attnlab {
namespace {

// The fused CPU path's node: the forward kept lse_a, lse_b, E_p[D] and E_r[D] per row, so the
// backward recomputes p and r element by element into the two gradients it allocates.
class SymmetricKlNode final : public Node {
 public:
  SymmetricKlNode(const Tensor& a, const Tensor& b, const Tensor& targets, Tensor stats, std::int64_t ignore_index)
      : a_(a.detach()), b_(b.detach()), targets_(targets.detach()), stats_(std::move(stats)),
        ignore_index_(ignore_index) {}
  std::vector<Tensor> backward(std::vector<Tensor>& grads) override {
    const Tensor g = detail::grad_or_zeros(grads, 0, output_shapes[0], output_dtypes[0], device).to(a_.dtype());
    Tensor da = Tensor::empty_like(a_), db = Tensor::empty_like(b_);
    detail::symmetric_kl_backward_cpu(a_, b_, targets_, ignore_index_, stats_, g, da, db);
    return {da, db, Tensor()};
  }
  void release() override { a_ = b_ = targets_ = stats_ = Tensor(); }
  std::string_view name() const override { return "symmetric_kl"; }

 private:
  Tensor a_, b_, targets_, stats_;
  std::int64_t ignore_index_;
};

}  // namespace

namespace detail {

Tensor symmetric_kl_composed(const Tensor& a, const Tensor& b, const Tensor& targets, std::int64_t ignore_index) {
  const Tensor mask = index_mask(targets, ignore_index, 0.0, 1.0, a.dtype());  // [N]: 0 where ignored
  const Tensor d = sub(log_softmax(a), log_softmax(b));                       // [N, V]
  const Tensor rows = sum(mul(sub(softmax(a), softmax(b)), d), 1);            // [N]
  return sum(mul(rows, mask));
}

}  // namespace detail

Tensor symmetric_kl(const Tensor& logits_a, const Tensor& logits_b, const Tensor& targets,
                    std::int64_t ignore_index) {
  detail::check_float_operands("symmetric_kl", logits_a, "logits_a", logits_b, "logits_b");
  detail::check_defined("symmetric_kl", targets, "targets");
  ATTNLAB_CHECK(targets.dtype() == DType::i32 || targets.dtype() == DType::i64,
                "symmetric_kl: targets must be i32 or i64, got {}", targets.str());
  detail::check_same_device("symmetric_kl", logits_a, targets);
  ATTNLAB_CHECK(logits_a.rank() == 2, "symmetric_kl: logits must be [N, V], got {}", logits_a.shape().str());
  detail::check_same_shape("symmetric_kl", logits_a, logits_b);
  ATTNLAB_CHECK(targets.rank() == 1 && targets.dim(0) == logits_a.dim(0),
                "symmetric_kl: targets must be [N] = [{}] for logits {}, got {}", logits_a.dim(0),
                logits_a.shape().str(), targets.shape().str());
  if (!logits_a.device().is_cpu()) return detail::symmetric_kl_composed(logits_a, logits_b, targets, ignore_index);
  Tensor stats = Tensor::empty({logits_a.dim(0), 4}, logits_a.dtype(), logits_a.device());
  Tensor loss_sum = Tensor::empty(Shape{}, logits_a.dtype(), logits_a.device());
  detail::symmetric_kl_forward_cpu(logits_a, logits_b, targets, ignore_index, stats, loss_sum);
  if (any_requires_grad({&logits_a, &logits_b}))
    record(std::make_shared<SymmetricKlNode>(logits_a, logits_b, targets, stats, ignore_index),
           {&logits_a, &logits_b, &targets}, loss_sum);
  return loss_sum;
}

}  // namespace attnlab
