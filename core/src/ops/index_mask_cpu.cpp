// CPU kernel of index_mask.cpp: one pass over the ids, in f64, then rounded to the mask's dtype
// (bf16 through the tensor conversion, as the CUDA kernel rounds it).
#include <cstring>

#include "ops/index_mask_kernels.h"
#include "ops/op_util.h"

namespace attnlab::detail {

void index_mask_cpu(const Tensor& ids, std::int64_t id, double at_id, double otherwise, Tensor& out) {
  Tensor wide = out.dtype() == DType::f64 ? out : Tensor::empty(ids.shape(), DType::f64, Device::cpu());
  double* po = wide.data<double>();
  dispatch_index("index_mask", ids.dtype(), [&](auto tag) {
    using I = typename decltype(tag)::type;
    const I* pi = ids.data<I>();
    for (std::int64_t i = 0; i < ids.numel(); ++i) po[i] = static_cast<std::int64_t>(pi[i]) == id ? at_id : otherwise;
  });
  if (out.dtype() != DType::f64) {
    const Tensor narrow = wide.to(out.dtype());
    std::memcpy(out.raw_data(), narrow.raw_data(), out.nbytes());
  }
}

}  // namespace attnlab::detail
