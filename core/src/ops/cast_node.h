#pragma once
// cast()'s tape entry for a conversion made elsewhere (attnlab/bf16_operands.h), and what such a
// bf16 copy must be.
#include "attnlab/tensor.h"

namespace attnlab::detail {

// `copy` (x's values converted to copy's dtype, made beforehand) as cast(x, copy.dtype())
// would return it: a tensor on copy's storage whose gradient flows to x.
Tensor cast_from_copy(const Tensor& x, const Tensor& copy);

// Whether `copy` can hold bf16(source): source f32, copy bf16 of its shape on its device (both
// defined). What Bf16Operands::provide and adam_step_multi's bf16_copies require.
inline bool is_bf16_copy_of(const Tensor& copy, const Tensor& source) {
  return source.defined() && copy.defined() && source.dtype() == DType::f32 && copy.dtype() == DType::bf16 &&
         source.shape() == copy.shape() && source.device() == copy.device();
}

}  // namespace attnlab::detail
