#pragma once
// The id dtypes of the embedding launchers (i32, i64). No fmt: nvcc reads it.
#include <cstdint>
#include <string>

#include "attnlab/dtype.h"
#include "cuda/check.cuh"

namespace attnlab::cuda {

template <typename Fn>
void dispatch_ids(DType ids_dtype, Fn&& fn) {
  switch (ids_dtype) {
    case DType::i32: fn(std::int32_t{}); return;
    case DType::i64: fn(std::int64_t{}); return;
    default: break;
  }
  throw_message("embedding: ids must be i32 or i64, got " + std::string(dtype_name(ids_dtype)));
}

}  // namespace attnlab::cuda
