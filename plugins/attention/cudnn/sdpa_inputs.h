#pragma once
// What the cudnn plugin derives from an attention call before building a graph: per-batch key
// lengths from the additive padding mask, and whether the graph needs a causal mask. Plain C++,
// tested on the CPU.
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

// Whether the graph needs its causal (top-left, key j <= query i) mask. The attention contract
// lets query i see keys j <= i + (Tk - Tq): with Tq == Tk that is the top-left mask; with one
// query (a decoding step against a cache) it is every key, so no mask. Throws an Error for
// causal calls with other lengths.
bool causal_mask_needed(bool causal, std::int64_t s_q, std::int64_t s_kv);

}  // namespace attnlab::cudnn_attention
