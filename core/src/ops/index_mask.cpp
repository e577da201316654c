// index_mask: a constant per element chosen by whether an id equals a given one.
#include "attnlab/ops/index_mask.h"

#include "dispatch.h"
#include "ops/index_mask_kernels.h"
#include "ops/op_util.h"

namespace attnlab {

Tensor index_mask(const Tensor& ids, std::int64_t id, double at_id, double otherwise, DType dtype) {
  detail::check_defined("index_mask", ids, "ids");
  detail::check_index_dtype("index_mask", ids);
  ATTNLAB_CHECK(dtype_is_floating(dtype), "index_mask: the mask's dtype must be floating (f32, f64, bf16), got {}",
                dtype_name(dtype));
  Tensor out = Tensor::empty(ids.shape(), dtype, ids.device());
  ATTNLAB_DISPATCH(ids.device(), detail::index_mask, ids, id, at_id, otherwise, out);
  return out;
}

}  // namespace attnlab
