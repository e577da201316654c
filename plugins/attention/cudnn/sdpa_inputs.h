#pragma once
// What the cudnn plugin derives from an attention call before building a graph: the CPU reference
// of the per-batch key lengths its kernel takes from the additive padding mask, the words for a
// mask that breaks cuDNN's rule, and whether the graph needs a causal mask. Plain C++, tested on
// the CPU.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "mask_rule.h"

namespace attnlab::cudnn_attention {

// The CPU reference of key_lengths_cuda.cu for a mask [batch, keys] (row-major f32 host values):
// per row, the key length cuDNN gets, max(1, L_b), and the row's problem code under the rule of
// mask_rule.h (kNoMaskProblem when it follows it).
struct KeyLengths {
  std::vector<std::int32_t> lengths;
  std::vector<std::uint64_t> problems;
  std::uint64_t first_problem() const;  // the smallest code: the first offence in row-major order
};
KeyLengths key_lengths_reference(std::span<const float> mask, std::int64_t batch, std::int64_t keys);

// What a problem code says, e.g. "key padding mask row 1 has padding (-inf) at key 2 before a
// real key".
std::string describe_mask_problem(std::uint64_t code);

// Whether the graph needs a causal mask for the attention contract's rule, query i sees keys
// j <= i + (Tk - Tq): with one query (a decoding step against a cache) it sees every key, so no
// mask; otherwise the mask (top-left when Tq == Tk, bottom-right when Tq < Tk). Throws an Error
// for causal calls with Tq > Tk, whose first queries would see no key.
bool causal_mask_needed(bool causal, std::int64_t s_q, std::int64_t s_kv);

// Throws an Error for a causal mask with Tq < Tk in a call with a key padding mask. The graphs
// express that case (the CPU interpretation of them in the tests computes the core's rule), but
// cuDNN's fused engine gives other values for it on the GPU: with key lengths it appears to align
// the diagonal to each row's length rather than to Tk - Tq. The plugin declares the case
// unsupported (AttentionDeviceSupport::causal_longer_padded_keys) and refuses it here.
void check_causal_padding(bool causal_mask, bool padding, std::int64_t s_q, std::int64_t s_kv);

// Throws an Error when the cuDNN at run time (e.g. 90501 for 9.5.1) cannot serve the causal mask:
// before 9.6.0 the bottom-right diagonal (Tq < Tk) needs lengths that are multiples of 64.
void check_causal_alignment(bool causal_mask, std::int64_t s_q, std::int64_t s_kv, std::size_t cudnn_version);

}  // namespace attnlab::cudnn_attention
