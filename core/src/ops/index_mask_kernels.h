#pragma once
// Backend kernels of index_mask.cpp. ids i32/i64, out floating of ids' shape, same device.
#include <cstdint>

#include "attnlab/tensor.h"

namespace attnlab::detail {

// out[i] = ids[i] == id ? at_id : otherwise, rounded to out's dtype.
void index_mask_cpu(const Tensor& ids, std::int64_t id, double at_id, double otherwise, Tensor& out);
void index_mask_cuda(const Tensor& ids, std::int64_t id, double at_id, double otherwise, Tensor& out);

}  // namespace attnlab::detail
