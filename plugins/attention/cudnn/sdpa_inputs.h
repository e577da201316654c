#pragma once
// What the cudnn plugin derives from an attention call before building a graph: per-batch key
// lengths from the additive padding mask, and whether the graph needs a causal mask. Plain C++,
// tested on the CPU.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace attnlab::cudnn_attention {

// The key lengths of an additive key padding mask [batch, keys] (row-major host values): row b
// must hold 0 for keys 0 .. L_b - 1 and -inf from L_b on, with L_b >= 1, because cuDNN takes
// padding as per-batch sequence lengths. Throws an Error naming the row, the key and the value
// otherwise (a mask that is not a prefix of real keys, other values, a row without keys).
std::vector<std::int32_t> key_lengths_from_mask(std::span<const double> mask, std::int64_t batch,
                                                std::int64_t keys);

// Whether the graph needs a causal mask for the attention contract's rule, query i sees keys
// j <= i + (Tk - Tq): with one query (a decoding step against a cache) it sees every key, so no
// mask; otherwise the mask (top-left when Tq == Tk, bottom-right when Tq < Tk). Throws an Error
// for causal calls with Tq > Tk, whose first queries would see no key.
bool causal_mask_needed(bool causal, std::int64_t s_q, std::int64_t s_kv);

// Throws an Error when the cuDNN at run time (e.g. 90501 for 9.5.1) cannot serve the causal mask:
// before 9.6.0 the bottom-right diagonal (Tq < Tk) needs lengths that are multiples of 64.
void check_causal_alignment(bool causal_mask, std::int64_t s_q, std::int64_t s_kv, std::size_t cudnn_version);

}  // namespace attnlab::cudnn_attention
