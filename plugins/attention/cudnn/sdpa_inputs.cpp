#include "sdpa_inputs.h"

#include <cmath>

#include "attnlab/error.h"

namespace attnlab::cudnn_attention {

std::vector<std::int32_t> key_lengths_from_mask(std::span<const double> mask, std::int64_t batch,
                                                std::int64_t keys) {
  ATTNLAB_CHECK(batch >= 0 && keys >= 0 && static_cast<std::int64_t>(mask.size()) == batch * keys,
                "attention cudnn: key padding mask has {} values for [{}, {}]", mask.size(), batch, keys);
  std::vector<std::int32_t> lengths(static_cast<std::size_t>(batch));
  for (std::int64_t b = 0; b < batch; ++b) {
    std::int64_t length = keys;
    for (std::int64_t j = 0; j < keys; ++j) {
      const double v = mask[static_cast<std::size_t>(b * keys + j)];
      const bool pad = std::isinf(v) && v < 0;
      ATTNLAB_CHECK(pad || v == 0.0,
                    "attention cudnn: key padding mask value {} at [{}, {}]: the mask must hold 0 (real key) or "
                    "-inf (padding)",
                    v, b, j);
      if (pad && length == keys) length = j;
      ATTNLAB_CHECK(pad || length == keys,
                    "attention cudnn: key padding mask row {} has a real key at {} after padding at {}: cuDNN takes "
                    "padding as per-batch key lengths, so padding must be a suffix of each row; use scaled_dot or "
                    "flash for other masks",
                    b, j, length);
    }
    ATTNLAB_CHECK(length > 0, "attention cudnn: key padding mask row {} masks every key", b);
    lengths[static_cast<std::size_t>(b)] = static_cast<std::int32_t>(length);
  }
  return lengths;
}

bool causal_mask_needed(bool causal, std::int64_t s_q, std::int64_t s_kv) {
  if (!causal) return false;
  if (s_q == s_kv) return s_q > 1;
  ATTNLAB_CHECK(s_q == 1,
                "attention cudnn: causal attention with {} queries over {} keys is not supported (only equal "
                "lengths, or one query step against a cache); use scaled_dot or flash",
                s_q, s_kv);
  return false;
}

}  // namespace attnlab::cudnn_attention
