#pragma once
// Embedding lookup: out[..., :] = weight[ids[...], :].
//   weight [V, D] floating; ids [...] i32 or i64 with values in [0, V) (else an Error naming the
//   first bad id and V). Result [..., D]. The backward scatter-adds into weight's gradient
//   (repeated ids accumulate); ids receive no gradient.
#include <cstdint>
#include <vector>

#include "attnlab/tensor.h"

namespace attnlab {

Tensor embedding(const Tensor& weight, const Tensor& ids);

// Rows `rows` of x along its first axis, in that order (repeats allowed): x [N, ...] ->
// [rows.size(), ...]. The embedding lookup over x viewed as [N, rest]; differentiable in x.
Tensor select_rows(const Tensor& x, const std::vector<std::int64_t>& rows);

}  // namespace attnlab
