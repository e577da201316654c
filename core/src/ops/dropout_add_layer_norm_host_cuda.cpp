// dropout_add_layer_norm_*_cuda: unpack the tensors and call the launchers of
// dropout_add_layer_norm_cuda.cu (CUDA builds only).
#include "ops/dropout_add_layer_norm_cuda.h"
#include "ops/dropout_add_layer_norm_kernels.h"
#include "ops/op_util.h"

namespace attnlab::detail {
namespace {

namespace launch = cuda_dropout_add_layer_norm;

template <typename T>
T* ptr_or_null(const Tensor& t) { return t.defined() ? t.data<T>() : nullptr; }

launch::Mask to_launch(const DropoutMask& mask) { return {mask.p, mask.seed, mask.offset}; }

}  // namespace

void dropout_add_layer_norm_forward_cuda(const DropoutAddLayerNormInputs& in, const DropoutMask& mask,
                                         double eps, Tensor& sum, Tensor& y, Tensor& mean, Tensor& rstd) {
  dispatch_float("dropout_add_layer_norm", in.x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const std::int64_t d = in.x.dim(-1);
    if (d == 0 || in.x.numel() == 0) return;
    launch::forward<T>(in.x.data<T>(), ptr_or_null<T>(in.bias), in.residual.data<T>(), ptr_or_null<T>(in.gamma),
                       ptr_or_null<T>(in.beta), in.x.numel() / d, d, to_launch(mask), in.residual_scale, in.centered,
                       eps, sum.data<T>(), y.data<T>(), mean.data<T>(), rstd.data<T>(), in.x.device().index,
                       cuda::current_stream(in.x.device().index));
  });
}

void dropout_add_layer_norm_backward_cuda(const Tensor& sum, const Tensor& gamma, const Tensor& mean,
                                          const Tensor& rstd, const Tensor& dy, const DropoutMask& mask,
                                          bool centered, DropoutAddLayerNormGrads& grads) {
  dispatch_float("dropout_add_layer_norm", sum.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const std::int64_t d = sum.dim(-1);
    const std::int64_t rows = d == 0 ? 0 : sum.numel() / d;
    const int device = sum.device().index;
    if (grads.ds.defined())
      launch::backward_rows<T>(sum.data<T>(), ptr_or_null<T>(gamma), mean.data<T>(), rstd.data<T>(), dy.data<T>(),
                               rows, ptr_or_null<T>(grads.ds_extra), d, to_launch(mask), centered, grads.ds.data<T>(), ptr_or_null<T>(grads.dx),
                               device, cuda::current_stream(device));
    if (grads.dgamma.defined() || grads.dbeta.defined() || grads.dbias.defined()) {
      const std::int64_t chunks = (rows + launch::kRowChunk - 1) / launch::kRowChunk;
      // Freed at the end of this scope while the kernels may still be queued: safe, since whatever
      // reuses the block is queued after them on the same stream (caching_allocator.h).
      Tensor partial = Tensor::empty(Shape{3, chunks, d}, DType::f64, sum.device());
      launch::backward_params<T>(sum.data<T>(), mean.data<T>(), rstd.data<T>(), dy.data<T>(),
                                 ptr_or_null<T>(grads.dx), rows, d, partial.data<double>(),
                                 ptr_or_null<T>(grads.dgamma), ptr_or_null<T>(grads.dbeta),
                                 ptr_or_null<T>(grads.dbias), device, cuda::current_stream(device));
    }
  });
}

}  // namespace attnlab::detail
