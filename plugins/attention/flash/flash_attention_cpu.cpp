// flash_attention's key lengths on the CPU (the forward and backward are flash_cpu_forward.cpp and
// flash_cpu_backward.cpp).
#include <limits>

#include "flash_cpu.h"

namespace attnlab::flash::detail {

using cpu_path::for_float;

void flash_key_lengths_cpu(const Tensor& mask, Tensor& lengths) {
  for_float(mask.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* m = mask.data<T>();
    std::int32_t* out = lengths.data<std::int32_t>();
    const std::int64_t tk = mask.dim(1);
    for (std::int64_t b = 0; b < mask.dim(0); ++b) {
      std::int64_t len = tk;
      while (len > 0 && m[b * tk + len - 1] == -std::numeric_limits<T>::infinity()) --len;
      out[b] = static_cast<std::int32_t>(len);
    }
  });
}

}  // namespace attnlab::flash::detail
