#include "sdpa_inputs.h"

#include <algorithm>
#include <limits>

#include "attnlab/error.h"

namespace attnlab::cudnn_attention {

std::uint64_t KeyLengths::first_problem() const {
  std::uint64_t first = kNoMaskProblem;
  for (std::uint64_t code : problems) first = std::min(first, code);
  return first;
}

KeyLengths key_lengths_reference(std::span<const float> mask, std::int64_t batch, std::int64_t keys) {
  ATTNLAB_CHECK(batch >= 0 && keys > 0 && static_cast<std::int64_t>(mask.size()) == batch * keys,
                "attention cudnn: key padding mask has {} values for [{}, {}]", mask.size(), batch, keys);
  const float pad = -std::numeric_limits<float>::infinity();
  KeyLengths out;
  for (std::int64_t b = 0; b < batch; ++b) {
    const float* row = mask.data() + b * keys;
    std::int64_t length = keys;
    while (length > 0 && row[length - 1] == pad) --length;
    std::uint64_t code = length == 0 ? mask_problem_code(b, 0, MaskProblem::no_key) : kNoMaskProblem;
    for (std::int64_t j = 0; j < length && code == kNoMaskProblem; ++j)
      if (row[j] != 0.0f)
        code = mask_problem_code(b, j, row[j] == pad ? MaskProblem::padding_before_key : MaskProblem::bad_value);
    out.lengths.push_back(static_cast<std::int32_t>(std::max<std::int64_t>(length, 1)));
    out.problems.push_back(code);
  }
  return out;
}

std::string describe_mask_problem(std::uint64_t code) {
  const std::int64_t row = mask_problem_row(code), key = mask_problem_key(code);
  switch (mask_problem_kind(code)) {
    case MaskProblem::padding_before_key:
      return fmt::format("key padding mask row {} has padding (-inf) at key {} before a real key", row, key);
    case MaskProblem::bad_value:
      return fmt::format("key padding mask row {} holds a value other than 0 and -inf at key {}", row, key);
    case MaskProblem::no_key: return fmt::format("key padding mask row {} masks every key", row);
  }
  return fmt::format("key padding mask problem {:#x}", code);
}

bool causal_mask_needed(bool causal, std::int64_t s_q, std::int64_t s_kv) {
  if (!causal || s_q == 1) return false;  // one query step sees every key
  ATTNLAB_CHECK(s_q <= s_kv,
                "attention cudnn: causal attention with {} queries over {} keys is not supported (the first {} "
                "queries would see no key); use scaled_dot or flash",
                s_q, s_kv, s_q - s_kv);
  return true;
}

void check_causal_padding(bool causal_mask, bool padding, std::int64_t s_q, std::int64_t s_kv) {
  ATTNLAB_CHECK(!causal_mask || !padding || s_q == s_kv,
                "attention cudnn: causal queries over a longer padded key sequence ({} queries over {} keys with a key "
                "padding mask) are not supported: cuDNN's fused attention does not align the diagonal as query i "
                "sees keys j <= i + {} for them; use scaled_dot or flash",
                s_q, s_kv, s_kv - s_q);
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
