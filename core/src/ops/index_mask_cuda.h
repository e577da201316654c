#pragma once
// The launcher of index_mask_cuda.cu (plain types; pointers on the current device).
#include <cstdint>

#include "attnlab/dtype.h"
#include "cuda/launch.h"

namespace attnlab::cuda {

// ids_dtype i32 / i64, dtype f32 / f64 / bf16: out[i] = ids[i] == id ? at_id : otherwise.
void index_mask(DType ids_dtype, const void* ids, std::int64_t n, std::int64_t id, double at_id, double otherwise,
                DType dtype, void* out, cudaStream_t stream);

}  // namespace attnlab::cuda
