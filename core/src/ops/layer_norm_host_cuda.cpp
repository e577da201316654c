// layer_norm_*_cuda: unpack the tensors and call the launchers of layer_norm_cuda.cu (CUDA builds only).
#include "ops/layer_norm_cuda.h"
#include "ops/layer_norm_kernels.h"
#include "ops/op_util.h"

namespace attnlab::detail {
namespace {
template <typename T>
const T* ptr_or_null(const Tensor& t) { return t.defined() ? t.data<T>() : nullptr; }
template <typename T>
T* mut_or_null(const Tensor& t) { return t.defined() ? t.data<T>() : nullptr; }
}  // namespace

void layer_norm_forward_cuda(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps,
                             Tensor& y, Tensor& mean, Tensor& rstd, bool centered) {
  dispatch_float("layer_norm", x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const std::int64_t d = x.dim(-1);
    if (d == 0 || x.numel() == 0) return;
    cuda_layer_norm::forward<T>(x.data<T>(), ptr_or_null<T>(gamma), ptr_or_null<T>(beta), x.numel() / d, d,
                                eps, centered, y.data<T>(), mean.data<T>(), rstd.data<T>(), x.device().index,
                                cuda::current_stream(x.device().index));
  });
}

void layer_norm_backward_cuda(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                              const Tensor& rstd, const Tensor& dy, Tensor& dx, Tensor& dgamma,
                              Tensor& dbeta, bool centered) {
  dispatch_float("layer_norm", x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const std::int64_t d = x.dim(-1);
    const std::int64_t rows = d == 0 ? 0 : x.numel() / d;
    const int device = x.device().index;
    if (dx.defined() && rows > 0)
      cuda_layer_norm::backward_dx<T>(x.data<T>(), ptr_or_null<T>(gamma), mean.data<T>(), rstd.data<T>(),
                                      dy.data<T>(), rows, d, centered, dx.data<T>(), device,
                                      cuda::current_stream(device));
    if (dgamma.defined() || dbeta.defined()) {
      const std::int64_t chunks = (rows + cuda_layer_norm::kRowChunk - 1) / cuda_layer_norm::kRowChunk;
      Tensor partial = Tensor::empty(Shape{2, chunks, d}, DType::f64, x.device());
      cuda_layer_norm::backward_params<T>(ptr_or_null<T>(x), ptr_or_null<T>(mean), ptr_or_null<T>(rstd),
                                          ptr_or_null<T>(dy), rows, d, partial.data<double>(),
                                          mut_or_null<T>(dgamma), mut_or_null<T>(dbeta), device,
                                          cuda::current_stream(device));
    }
  });
}

}  // namespace attnlab::detail
