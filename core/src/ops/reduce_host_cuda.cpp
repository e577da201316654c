// reduce_sum*_cuda: unpack the tensors and call the launchers of reduce_cuda.cu (CUDA builds only).
#include "ops/op_util.h"
#include "ops/reduce_cuda.h"
#include "ops/reduce_kernels.h"

namespace attnlab::detail {

void reduce_sum_cuda(std::string_view op, const Tensor& x, std::int64_t outer, std::int64_t n,
                     std::int64_t inner, double scale, Tensor& out) {
  dispatch_float(op, x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const std::int64_t chunks = inner == 1 ? (n + cuda_reduce::kChunk - 1) / cuda_reduce::kChunk : 0;
    Tensor partial = Tensor::empty(Shape{outer * chunks}, DType::f64, x.device());
    cuda_reduce::sum<T>(x.numel() > 0 ? x.data<T>() : nullptr, outer, n, inner, scale, partial.data<double>(),
                        out.data<T>(), x.device().index, cuda::current_stream(x.device().index));
  });
}

void reduce_sum_backward_cuda(std::string_view op, const Tensor& g, std::int64_t outer,
                              std::int64_t n, std::int64_t inner, double scale, Tensor& dx) {
  dispatch_float(op, g.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (dx.numel() == 0) return;
    cuda_reduce::sum_backward<T>(g.data<T>(), outer, n, inner, scale, dx.data<T>(), g.device().index,
                                 cuda::current_stream(g.device().index));
  });
}

}  // namespace attnlab::detail
