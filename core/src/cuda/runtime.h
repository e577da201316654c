#pragma once
// The CUDA runtime pieces the core needs (defined in .cu files). Call them only through the
// macros of dispatch.h, which compile them out of a build without CUDA.
#include <cstddef>
#include <cstdint>

#include "attnlab/allocator.h"
#include "attnlab/dtype.h"

namespace attnlab::cuda {

int device_count();
// Waits until device `index` has finished all queued work.
void synchronize(int index);
Allocator& allocator(int index);
// cudaMemcpy between any two devices (host included); synchronous.
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes);
// dst[0..n) = value, converted to dtype.
void fill(void* dst, DType dtype, std::int64_t n, double value, int device_index);
// dst[i] = convert(src[i]) for i < n, both on device `device_index`, by the rules of convert_cpu
// (floats to ints truncate, bf16 through f32). Asynchronous on the default stream.
void convert(void* dst, DType dst_dtype, const void* src, DType src_dtype, std::int64_t n, int device_index);

}  // namespace attnlab::cuda
