#pragma once
// The cudnn plugin's one kernel (key_lengths_cuda.cu): per-batch key lengths from the additive
// key padding mask, on the device, so that no call copies the mask to the host. No CUDA types.
#include <cstdint>

struct CUstream_st;

namespace attnlab::cudnn_attention {

// For each row b of `mask` (f32 [batch, keys], device; keys >= 1): seq_len_kv[b] = max(1, L_b) with
// L_b = 1 + the last key that is not -inf, and seq_len_q[b] = s_q (i32 [batch], device). A row
// that breaks the rule of mask_rule.h stores its problem code in *problem (device-accessible
// memory, e.g. host-mapped; a plain 8-byte store, so with several such rows one of their codes
// is left there). Queued on `stream`; returns the launch's cudaError_t (0: success).
int launch_key_lengths(const float* mask, std::int64_t batch, std::int64_t keys, std::int32_t s_q,
                       std::int32_t* seq_len_q, std::int32_t* seq_len_kv, std::uint64_t* problem, CUstream_st* stream);

// cudaGetErrorString of a status returned above.
const char* key_lengths_error_string(int status);

}  // namespace attnlab::cudnn_attention
