#pragma once
// The Hopper (sm_90a) flash kernels, plain C++ side: whether this build has them, their blocks'
// shared memory and scratch, and their launchers (which problems and devices they take:
// choose_kernel, flash_kernel_choice.h). flash_sm90_forward.cu and flash_sm90_backward.cu
// implement these where CUTLASS's CuTe was found at build time (cmake: ATTNLAB_CUTLASS_DIR),
// flash_sm90_absent.cpp where not. The kernels run only where
// ATTNLAB_FLASH_SM90=1 is set: until their parity with the sm_80 kernels has been measured on a
// Hopper GPU (bench/gpu_checks.sh, phase sm90), the sm_80 kernels stay the default there.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "attnlab/env.h"
#include "flash_attention_cuda.h"

namespace attnlab::flash::cuda {

// Whether this build compiled the Hopper kernel (CUTLASS found).
bool sm90_built();
// Whether the switch ATTNLAB_FLASH_SM90 asks for it (read once, attnlab/env.h).
inline bool sm90_opted_in() {
  static const bool on = env::flag("ATTNLAB_FLASH_SM90");
  return on;
}
// Dynamic shared memory of the forward's block, and of the backward's two (one size), at head
// size d (64 or 128; 0 for others and where the kernels are not built).
std::size_t sm90_forward_smem(std::int64_t d);
std::size_t sm90_backward_smem(std::int64_t d);
// Shared memory the Hopper forward's block takes for bucket values besides its tiles: a float per
// query of its 128 and distance bucket (flash_sm90_values.cuh); 0 without them.
inline std::size_t sm90_value_smem(const Problem& p) {
  return p.bucket_values ? std::size_t{128} * static_cast<std::size_t>(2 * p.value_clip + 1) * sizeof(float) : 0;
}
// The Hopper forward's and dQ kernel's blocks: one per head and tile of 128 queries.
inline std::int64_t sm90_query_blocks(const Problem& p) { return p.batch * p.heads * ((p.tq + 127) / 128); }
// Floats of TermGrads::value_shares the Hopper backward needs with bucket values: u = dout . V^T
// per query and bucket, then each dQ block's share of their gradient (buckets x d); 0 without.
inline std::int64_t sm90_value_scratch_floats(const Problem& p) {
  if (!p.bucket_values) return 0;
  const std::int64_t buckets = 2 * p.value_clip + 1;
  return p.batch * p.heads * p.tq * buckets + sm90_query_blocks(p) * buckets * p.dv;
}
// Whether a problem needs the kernels' kExtras variant (forward and backward alike): an additive
// mask, score terms, dropout or score expressions (whose kernels NVRTC compiled: Problem's
// expr_hopper); without them the scores need only the causal and key-length limits.
inline bool sm90_extras(const Problem& p) {
  return p.mask || p.slopes || p.bucket_scores || p.dropout > 0.0 || p.expr;
}
// out [B, H, Tq, d] bf16, lse [B, H, Tq] f32, as forward(); 0 or the CUDA error code.
int sm90_forward(const Problem& p, void* out, float* lse);
// dq, dk, dv [B, H, T, d] bf16 from dout, the forward's lse and delta = rowsum(dout * out), as
// backward() after its delta_kernel, and the position terms' gradients into `terms` (bf16; with
// bucket values, terms.value_shares holds sm90_value_scratch_floats(p)); 0 or the CUDA error code.
int sm90_backward(const Problem& p, const void* dout, const float* lse, const float* delta, void* dq, void* dk,
                  void* dv, const TermGrads& terms);

}  // namespace attnlab::flash::cuda
