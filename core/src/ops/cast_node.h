#pragma once
// cast()'s tape entry for a conversion made elsewhere (attnlab/bf16_operands.h).
#include "attnlab/tensor.h"

namespace attnlab::detail {

// `copy` (x's values converted to copy's dtype, made beforehand) as cast(x, copy.dtype())
// would return it: a tensor on copy's storage whose gradient flows to x.
Tensor cast_from_copy(const Tensor& x, const Tensor& copy);

}  // namespace attnlab::detail
