// CPU kernel of index_mask.cpp: the two constants rounded to the mask's dtype once (bf16 by the
// tensor conversion, as the CUDA kernel rounds it), then one pass over the ids copying the one
// each element takes.
#include <cstring>

#include "ops/index_mask_kernels.h"
#include "ops/op_util.h"

namespace attnlab::detail {

void index_mask_cpu(const Tensor& ids, std::int64_t id, double at_id, double otherwise, Tensor& out) {
  const Tensor values = Tensor::from_vector<double>({2}, {otherwise, at_id}).to(out.dtype());
  const std::size_t size = dtype_size(out.dtype());
  const auto* value = static_cast<const unsigned char*>(values.raw_data());
  auto* po = static_cast<unsigned char*>(out.raw_data());
  dispatch_index("index_mask", ids.dtype(), [&](auto tag) {
    using I = typename decltype(tag)::type;
    const I* pi = ids.data<I>();
    for (std::int64_t i = 0; i < ids.numel(); ++i)
      std::memcpy(po + static_cast<std::size_t>(i) * size, value + (static_cast<std::int64_t>(pi[i]) == id ? size : 0),
                  size);
  });
}

}  // namespace attnlab::detail
