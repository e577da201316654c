#pragma once
// Embedding lookup: out[..., :] = weight[ids[...], :].
//   weight [V, D] floating; ids [...] i32 or i64 with values in [0, V) (else an Error naming the
//   first bad id and V). Result [..., D]. The backward scatter-adds into weight's gradient
//   (repeated ids accumulate); ids receive no gradient.
#include "attnlab/tensor.h"

namespace attnlab {

Tensor embedding(const Tensor& weight, const Tensor& ids);

}  // namespace attnlab
