#pragma once
// A mask from integer ids, made where the ids are (on CUDA by a kernel: no copy to the host).
#include <cstdint>

#include "attnlab/tensor.h"

namespace attnlab {

// A tensor of ids' shape, `dtype` (f32, f64, bf16) and device: `at_id` where ids == id and
// `otherwise` elsewhere. The additive key padding mask of a batch, for example, is
// index_mask(ids, pad_id, -inf, 0, dtype). Not differentiable: its input is integers and its
// values are constants. Throws an Error for ids that are not i32 / i64 or a dtype that is not
// floating.
Tensor index_mask(const Tensor& ids, std::int64_t id, double at_id, double otherwise, DType dtype);

}  // namespace attnlab
