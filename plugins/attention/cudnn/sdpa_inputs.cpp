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
  if (!causal || s_q == 1) return false;  // one query step sees every key
  ATTNLAB_CHECK(s_q <= s_kv,
                "attention cudnn: causal attention with {} queries over {} keys is not supported (the first {} "
                "queries would see no key); use scaled_dot or flash",
                s_q, s_kv, s_q - s_kv);
  return true;
}

void check_causal_alignment(bool causal_mask, std::int64_t s_q, std::int64_t s_kv, std::size_t cudnn_version) {
  if (!causal_mask || s_q == s_kv || cudnn_version >= 90600) return;
  ATTNLAB_CHECK(s_q % 64 == 0 && s_kv % 64 == 0,
                "attention cudnn: causal attention with {} queries over {} keys needs the bottom-right diagonal, which "
                "cuDNN {} serves only for lengths that are multiples of 64 (any length from cuDNN 9.6.0 on); use "
                "scaled_dot or flash, or a newer cuDNN",
                s_q, s_kv, cudnn_version);
}

}  // namespace attnlab::cudnn_attention
