// softmax_*_cuda: unpack the tensors and call the launchers of softmax_cuda.cu (CUDA builds only).
#include "ops/op_util.h"
#include "ops/softmax_cuda.h"
#include "ops/softmax_kernels.h"

namespace attnlab::detail {
namespace {

cuda_softmax::MaskIndex mask_index(std::string_view op, const Shape& x, const Shape& m) {
  cuda_softmax::MaskIndex index;
  const int r = x.rank();
  ATTNLAB_CHECK(r - 1 <= cuda::kMaxRank, "{}: a mask on cuda supports x of rank <= {}, got {}", op,
                cuda::kMaxRank + 1, x.str());
  std::int64_t s = 1;
  std::int64_t strides[cuda::kMaxRank + 1] = {};
  for (int k = r - 1; k >= 0; --k) {
    strides[k] = m[k] == 1 ? 0 : s;
    s *= m[k];
  }
  index.rank = r - 1;
  for (int k = 0; k < r - 1; ++k) {
    index.dims[k] = x[k];
    index.strides[k] = strides[k];
  }
  index.key_step = strides[r - 1] == 0 ? 0 : 1;
  return index;
}

}  // namespace

void softmax_forward_cuda(const Tensor& x, const Tensor& mask, bool causal, bool log, Tensor& y) {
  const std::string_view op = log ? "log_softmax" : "softmax";
  dispatch_float(op, x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const std::int64_t cols = x.dim(-1);
    if (cols == 0 || x.numel() == 0) return;
    const cuda_softmax::MaskIndex index =
        mask.defined() ? mask_index(op, x.shape(), mask.shape()) : cuda_softmax::MaskIndex{};
    cuda_softmax::forward<T>(x.data<T>(), mask.defined() ? mask.data<T>() : nullptr, index, x.numel() / cols,
                             cols, causal, causal ? x.dim(-2) : 1, log, y.data<T>(), x.device().index,
                             cuda::current_stream(x.device().index));
  });
}

void softmax_backward_cuda(const Tensor& y, const Tensor& dy, bool log, Tensor& dx) {
  dispatch_float(log ? "log_softmax" : "softmax", y.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const std::int64_t cols = y.dim(-1);
    if (cols == 0 || y.numel() == 0) return;
    cuda_softmax::backward<T>(y.data<T>(), dy.data<T>(), y.numel() / cols, cols, log, dx.data<T>(),
                              y.device().index, cuda::current_stream(y.device().index));
  });
}

}  // namespace attnlab::detail
