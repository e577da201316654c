// cross_entropy_*_cuda: unpack the tensors and call the launchers of cross_entropy_cuda.cu (CUDA
// builds only).
#include "device/index_check.h"
#include "device/index_check_log.h"
#include "ops/cross_entropy_cuda.h"
#include "ops/cross_entropy_kernels.h"
#include "ops/op_util.h"

namespace attnlab::detail {

void cross_entropy_check_targets_cuda(const Tensor& targets, std::int64_t vocab, std::int64_t ignore_index,
                                      Tensor& tokens) {
  const int device = targets.device().index;
  if (targets.numel() >= index_check::kMaxCheckedPositions) {  // too many for a check word: on the host
    tokens = Tensor::full(Shape{}, static_cast<double>(cross_entropy_check_targets_cpu(
                                       targets.to(Device::cpu()), vocab, ignore_index)),
                          DType::i64, targets.device());
    return;
  }
  std::uint64_t* check = nullptr;
  if (targets.numel() > 0)
    check = cuda::reserve_index_check(device,
                                      {"cross_entropy", "target", cross_entropy_target_rule(vocab, ignore_index)});
  dispatch_index("cross_entropy", targets.dtype(), [&](auto itag) {
    using I = typename decltype(itag)::type;
    cuda_cross_entropy::check_targets<I>(targets.data<I>(), targets.numel(), vocab, ignore_index, check,
                                         tokens.data<std::int64_t>(), device, cuda::current_stream(device));
  });
}

void cross_entropy_forward_cuda(const Tensor& logits, const Tensor& targets, double eps,
                                std::int64_t ignore_index, Tensor& lse, Tensor& loss_sum) {
  dispatch_float_and_index("cross_entropy", logits.dtype(), targets.dtype(), [&]<typename X, typename T, typename I>() {
    const std::int64_t n = logits.dim(0);
    const int device = logits.device().index;
    Tensor row_loss = Tensor::empty(Shape{n}, DType::f64, logits.device());
    cuda_cross_entropy::forward<X, T, I>(logits.data<X>(), targets.data<I>(), n, logits.dim(1), eps, ignore_index,
                                         lse.data<T>(), row_loss.data<double>(), loss_sum.data<T>(), device,
                                         cuda::current_stream(device));
  });
}

void cross_entropy_backward_cuda(const Tensor& logits, const Tensor& targets, const Tensor& lse, double eps,
                                 std::int64_t ignore_index, const Tensor& g, Tensor& dlogits) {
  const DType values = logits.dtype(), ids = targets.dtype();
  dispatch_float_and_index("cross_entropy_backward", values, ids, [&]<typename X, typename T, typename I>() {
    const int device = logits.device().index;
    cuda_cross_entropy::backward<X, T, I>(logits.data<X>(), targets.data<I>(), lse.data<T>(), logits.dim(0),
                                          logits.dim(1), eps, ignore_index, g.data<T>(), dlogits.data<X>(),
                                          device, cuda::current_stream(device));
  });
}

}  // namespace attnlab::detail
