#pragma once
// The rule a key padding mask must follow for the cudnn plugin, shared by the CUDA kernel that
// applies it (key_lengths_cuda.cu) and its CPU reference (sdpa_inputs.cpp): cuDNN takes padding as
// per-batch key lengths, so row b of the additive mask [B, Tk] must be 0 for keys 0 .. L_b - 1 and
// -inf from L_b on, with L_b >= 1. L_b is 1 + the last key that is not -inf. A row that breaks the
// rule is reported as one 64-bit code (the row, the first offending key and what is wrong), the
// smallest code being the first offence in row-major order. Plain C++, also compiled by nvcc.
#include <cstdint>

#if defined(__CUDACC__)
#define ATTNLAB_CUDNN_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define ATTNLAB_CUDNN_HOST_DEVICE inline
#endif

namespace attnlab::cudnn_attention {

enum class MaskProblem : std::uint8_t {
  padding_before_key,  // -inf at a key before the last real key (padding that is not a suffix)
  bad_value,           // a value other than 0 and -inf before the last real key
  no_key,              // every key of the row is -inf
};

// No problem: every code of a problem is smaller.
inline constexpr std::uint64_t kNoMaskProblem = ~std::uint64_t{0};

// Rows below 2^30 and keys below 2^32 fit: code = row << 34 | key << 2 | problem.
ATTNLAB_CUDNN_HOST_DEVICE std::uint64_t mask_problem_code(std::int64_t row, std::int64_t key, MaskProblem problem) {
  return static_cast<std::uint64_t>(row) << 34 | static_cast<std::uint64_t>(key) << 2 |
         static_cast<std::uint64_t>(problem);
}
ATTNLAB_CUDNN_HOST_DEVICE std::int64_t mask_problem_row(std::uint64_t code) { return static_cast<std::int64_t>(code >> 34); }
ATTNLAB_CUDNN_HOST_DEVICE std::int64_t mask_problem_key(std::uint64_t code) {
  return static_cast<std::int64_t>((code >> 2) & 0xffffffffu);
}
ATTNLAB_CUDNN_HOST_DEVICE MaskProblem mask_problem_kind(std::uint64_t code) { return static_cast<MaskProblem>(code & 3u); }

}  // namespace attnlab::cudnn_attention
