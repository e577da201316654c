#pragma once
// The Hopper (sm_90a) flash forward, plain C++ side: whether this build has it, whether a problem
// and a device take it, and its launcher. flash_sm90_forward.cu implements these where CUTLASS's
// CuTe was found at build time (cmake: ATTNLAB_CUTLASS_DIR), flash_sm90_absent.cpp where not.
// The kernel runs only where ATTNLAB_FLASH_SM90=1 is set: until its parity with the sm_80 kernels
// has been measured on a Hopper GPU (bench/gpu_checks.sh, phase sm90), the sm_80 kernels stay the
// default there.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "flash_attention_cuda.h"

namespace attnlab::flash::cuda {

// Whether this build compiled the Hopper kernel (CUTLASS found).
bool sm90_built();
// Whether ATTNLAB_FLASH_SM90=1 asks for it (read once).
inline bool sm90_opted_in() {
  static const bool on = [] {
    const char* v = std::getenv("ATTNLAB_FLASH_SM90");
    return v && std::strcmp(v, "1") == 0;
  }();
  return on;
}
// Dynamic shared memory of its block at head size d (64 or 128; 0 for others).
std::size_t sm90_forward_smem(std::int64_t d);
// Whether the Hopper forward takes a problem: the tensor-core kernels' conditions
// (uses_tensor_cores) with d_k = d_v, no dropout and no value terms, but with the score terms
// (ALiBi's slopes, bucketed relative scores), which it applies itself.
inline bool sm90_takes_problem(const Problem& p, const void* out) {
  Problem plain = p;
  plain.bucket_scores = nullptr;
  return p.dk == p.dv && p.dropout == 0.0 && !p.bucket_values && uses_tensor_cores(plain, {out});
}
// Whether a device runs a Hopper block of `smem` bytes (0: no such block): sm_90 exactly (sm_90a
// code runs on no other GPU), and the block fits. forward() and `attnlab plugins` decide with it.
inline bool sm90_block_fits(const DeviceLimits& d, std::size_t smem) {
  return d.major == 9 && d.minor == 0 && smem > 0 && smem <= d.smem_optin;
}
inline bool sm90_takes_device(const DeviceLimits& d, std::int64_t head_size) {
  return sm90_block_fits(d, sm90_forward_smem(head_size));
}
// out [B, H, Tq, d] bf16, lse [B, H, Tq] f32, as forward(); 0 or the CUDA error code.
int sm90_forward(const Problem& p, void* out, float* lse);

}  // namespace attnlab::flash::cuda
