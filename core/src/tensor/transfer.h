#pragma once
// Host kernels behind Tensor::full, Tensor::to(DType) and host copies.
#include <cstdint>

#include "attnlab/dtype.h"

namespace attnlab::detail {

// dst[0..n) = value converted to dtype.
void fill_cpu(void* dst, DType dtype, std::int64_t n, double value);
// dst[i] = convert(src[i]) for i < n, between any two dtypes (floats to ints truncate).
void convert_cpu(void* dst, DType dst_dtype, const void* src, DType src_dtype, std::int64_t n);

}  // namespace attnlab::detail
