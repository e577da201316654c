// Label-smoothed cross-entropy with ignored targets, forward and backward.
#include "attnlab/ops/cross_entropy.h"

#include <cmath>

#include "attnlab/autograd.h"
#include "dispatch.h"
#include "ops/cross_entropy_kernels.h"
#include "ops/op_util.h"

namespace attnlab {
namespace {

// For a kept row with logits x, lse = log sum_k exp(x_k), p = softmax(x) and
// q = (1 - eps) onehot(y) + eps / V (so sum_k q_k = 1):
//   loss = -sum_k q_k (x_k - lse) = lse - sum_k q_k x_k
//   d loss / d x_j = d lse / d x_j - q_j = p_j - q_j.
// With the incoming gradient g of loss_sum (a scalar), dlogits[n, :] = g (p_n - q_n) for kept
// rows and 0 for ignored rows (they do not appear in the sum). The forward saves lse per row so
// that the backward recomputes p_j = exp(x_j - lse) without a second reduction.
class CrossEntropyNode final : public Node {
 public:
  CrossEntropyNode(const Tensor& logits, const Tensor& targets, Tensor lse, double eps, std::int64_t ignore_index)
      : logits_(logits.detach()), targets_(targets.detach()), lse_(std::move(lse)), eps_(eps),
        ignore_index_(ignore_index) {}
  std::vector<Tensor> backward(std::vector<Tensor>& grads) override {
    const Tensor g = detail::grad_or_zeros(grads, 0, output_shapes[0], output_dtypes[0], device);
    // The only [N, V] allocation of either pass, in the logits' dtype. The kernels read g where it
    // is (on CUDA without a wait for the queued work), in the loss's dtype.
    const Tensor g_in = g.to(lse_.dtype());
    Tensor dlogits = Tensor::empty_like(logits_);
    ATTNLAB_DISPATCH(logits_.device(), detail::cross_entropy_backward, logits_, targets_, lse_, eps_,
                         ignore_index_, g_in, dlogits);
    return {dlogits, Tensor()};
  }
  void release() override { logits_ = targets_ = lse_ = Tensor(); }
  std::string_view name() const override { return "cross_entropy"; }

 private:
  Tensor logits_, targets_, lse_;
  double eps_;
  std::int64_t ignore_index_;
};

}  // namespace

CrossEntropyResult cross_entropy(const Tensor& logits, const Tensor& targets, double label_smoothing,
                                 std::int64_t ignore_index) {
  detail::check_defined("cross_entropy", logits, "logits");
  detail::check_defined("cross_entropy", targets, "targets");
  detail::check_floating("cross_entropy", logits);
  ATTNLAB_CHECK(targets.dtype() == DType::i32 || targets.dtype() == DType::i64,
                "cross_entropy: targets must be i32 or i64, got {}", targets.str());
  detail::check_same_device("cross_entropy", logits, targets);
  ATTNLAB_CHECK(logits.rank() == 2, "cross_entropy: logits must be [N, V], got {}", logits.shape().str());
  ATTNLAB_CHECK(targets.rank() == 1 && targets.dim(0) == logits.dim(0),
                "cross_entropy: targets must be [N] = [{}] for logits {}, got {}", logits.dim(0),
                logits.shape().str(), targets.shape().str());
  ATTNLAB_CHECK(std::isfinite(label_smoothing) && label_smoothing >= 0.0 && label_smoothing < 1.0,
                "cross_entropy: label_smoothing must be in [0, 1), got {}", label_smoothing);
  // The targets are checked, and the kept ones counted, where they are: on CUDA by a kernel, so
  // that the host need not wait for the logits' kernels to read them (a bad target is thrown at
  // the host's next wait, with the CPU's message).
  Tensor tokens = Tensor::empty(Shape{}, DType::i64, targets.device());
  ATTNLAB_DISPATCH(targets.device(), detail::cross_entropy_check_targets, targets, logits.dim(1), ignore_index,
                   tokens);
  // bf16 logits: the statistics and the loss in f32.
  const DType stats = logits.dtype() == DType::bf16 ? DType::f32 : logits.dtype();
  Tensor lse = Tensor::empty({logits.dim(0)}, stats, logits.device());
  Tensor loss_sum = Tensor::empty(Shape{}, stats, logits.device());
  ATTNLAB_DISPATCH(logits.device(), detail::cross_entropy_forward, logits, targets, label_smoothing,
                       ignore_index, lse, loss_sum);
  if (any_requires_grad({&logits}))
    record(std::make_shared<CrossEntropyNode>(logits, targets, lse, label_smoothing, ignore_index),
           {&logits, &targets}, loss_sum);
  return {loss_sum, tokens};
}

}  // namespace attnlab
