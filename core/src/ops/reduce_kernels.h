#pragma once
// Backend kernels of reduce.cpp. x is viewed as [outer, n, inner] with n the reduced extent (a
// full reduction is outer = inner = 1, n = numel). Floating dtypes (f32, f64).
#include <cstdint>
#include <string_view>

#include "attnlab/tensor.h"

namespace attnlab::detail {

// Summation blocks: a run of n values is summed as fixed blocks of kReduceBlock values (each in
// double, in an order fixed by its length) whose partial sums are then added in block order. The
// layout depends only on n, so the result does not depend on the thread count.
inline constexpr std::int64_t kReduceBlock = 4096;

// out[o, j] = scale * sum_k x[o, k, j]. `op` names the op in errors.
void reduce_sum_cpu(std::string_view op, const Tensor& x, std::int64_t outer, std::int64_t n,
                    std::int64_t inner, double scale, Tensor& out);
// dx[o, k, j] = scale * g[o, j]: the reduced gradient broadcast back over the reduced axis.
void reduce_sum_backward_cpu(std::string_view op, const Tensor& g, std::int64_t outer,
                             std::int64_t n, std::int64_t inner, double scale, Tensor& dx);

// The same on a CUDA device (reduce_cuda.cu): deterministic, but summed in another fixed order.
void reduce_sum_cuda(std::string_view op, const Tensor& x, std::int64_t outer, std::int64_t n,
                     std::int64_t inner, double scale, Tensor& out);
void reduce_sum_backward_cuda(std::string_view op, const Tensor& g, std::int64_t outer,
                              std::int64_t n, std::int64_t inner, double scale, Tensor& dx);

}  // namespace attnlab::detail
