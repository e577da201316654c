// The key lengths kernel of the cudnn plugin (see key_lengths_cuda.h and mask_rule.h); its CPU
// reference is key_lengths_reference in sdpa_inputs.cpp.
#include "key_lengths_cuda.h"

#include <cuda_runtime.h>

#include "mask_rule.h"

namespace attnlab::cudnn_attention {
namespace {

constexpr int kThreads = 256;  // 8 warps per block
constexpr int kWarp = 32;
constexpr unsigned kFullWarp = 0xffffffffu;
constexpr long long kMaxBlocks = 65535;

// One warp per batch row, the warps striding over the rows (a grid smaller than the batch comes
// round again), so that b is the same for all 32 lanes and every shuffle has the full warp. Lanes
// read keys lane, lane + 32, ... (coalesced) and combine with xor shuffles; lane 0 writes.
//   L   = 1 + max{j : mask[b, j] != -inf}  (0 when every key is -inf)
//   bad = min{j < L : mask[b, j] != 0}     (L when there is none: the row follows the rule)
__global__ void key_lengths_kernel(const float* __restrict__ mask,  // (B, Tk)
                                   long long batch, long long keys, std::int32_t s_q,
                                   std::int32_t* __restrict__ seq_len_q,   // (B)
                                   std::int32_t* __restrict__ seq_len_kv,  // (B)
                                   std::uint64_t* problem) {               // (1), host-mapped
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const long long warps = static_cast<long long>(gridDim.x) * blockDim.x / kWarp;
  for (long long b = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp; b < batch; b += warps) {
    const float* row = mask + b * keys;
    long long length = 0;
    for (long long j = lane; j < keys; j += kWarp)  // j grows: the lane keeps its last real key
      if (row[j] != -INFINITY) length = j + 1;
    for (int offset = kWarp / 2; offset > 0; offset /= 2) {
      const long long other = __shfl_xor_sync(kFullWarp, length, offset);
      length = other > length ? other : length;
    }
    long long bad = length;  // the same on every lane after the reduction
    for (long long j = lane; j < length; j += kWarp)
      if (row[j] != 0.0f) {
        bad = j;
        break;
      }
    for (int offset = kWarp / 2; offset > 0; offset /= 2) {
      const long long other = __shfl_xor_sync(kFullWarp, bad, offset);
      bad = other < bad ? other : bad;
    }
    if (lane == 0) {
      seq_len_q[b] = s_q;
      seq_len_kv[b] = static_cast<std::int32_t>(length > 0 ? length : 1);  // cuDNN gets at least one key
      std::uint64_t code = kNoMaskProblem;
      if (length == 0)
        code = mask_problem_code(b, 0, MaskProblem::no_key);
      else if (bad < length)  // bad < L <= Tk: in the row
        code = mask_problem_code(b, bad,
                                 row[bad] == -INFINITY ? MaskProblem::padding_before_key : MaskProblem::bad_value);
      if (code != kNoMaskProblem) {
        *static_cast<volatile std::uint64_t*>(problem) = code;
        __threadfence_system();  // visible to the host once the kernel is done
      }
    }
  }
}

}  // namespace

int launch_key_lengths(const float* mask, std::int64_t batch, std::int64_t keys, std::int32_t s_q,
                       std::int32_t* seq_len_q, std::int32_t* seq_len_kv, std::uint64_t* problem, CUstream_st* stream) {
  if (batch <= 0) return static_cast<int>(cudaSuccess);
  constexpr long long warps_per_block = kThreads / kWarp;
  const long long needed = (batch + warps_per_block - 1) / warps_per_block;
  const unsigned blocks = static_cast<unsigned>(needed < kMaxBlocks ? needed : kMaxBlocks);
  key_lengths_kernel<<<blocks, kThreads, 0, stream>>>(mask, batch, keys, s_q, seq_len_q, seq_len_kv, problem);
  return static_cast<int>(cudaGetLastError());
}

const char* key_lengths_error_string(int status) { return cudaGetErrorString(static_cast<cudaError_t>(status)); }

}  // namespace attnlab::cudnn_attention
