#pragma once
// A host emulation of the Hopper operations of the sm_90a flash kernels
// (plugins/attention/flash/flash_sm90_ops.cuh), so that the rest of their device code (tile loads,
// pipeline barriers, masks, position terms, online softmax, the register view of P, epilogue) runs
// on the CPU and is checked against the CPU path (tests/flash_sm90). CuTe brings CUDA's own host
// headers (dim3, __nv_bfloat16 with its host conversions); cuda_host_threads.h runs the threads.
//   - copy16 copies at once (commit and wait_all have nothing left to do); the barrier after
//     wait_all orders the copies for the other threads, on the device as here.
//   - gemm_ss: each thread computes its accumulator elements from shared memory, at the
//     (row, column) that CuTe's partition of the same MMA gives each of its registers; bf16
//     products are exact in f32, summed in K order (the device's order is its own).
//   - gemm_rs: the A operand is spread over the threads' registers, as on the device: each thread
//     writes its registers to a block-wide tile at the (row, k) of CuTe's A partition, then, after
//     a __syncthreads, computes its elements from it; a second __syncthreads frees the tile.
// Not checked here: the wgmma instructions and the shared-memory descriptors CuTe builds for
// them (run only on a Hopper GPU: bench/gpu_checks.sh's sm90 phase), and that no thread reads
// a copy before wait_all (copies are immediate here).
#include <cuda_bf16.h>

#include <cstring>

#include "flash_sm90_layouts.cuh"
#ifndef __launch_bounds__
#define __launch_bounds__(...)
#endif
#include "support/cuda_host_bits.h"
#include "support/cuda_host_threads.h"

namespace attnlab::flash::cuda::sm90::ops {

inline void copy16(void* smem, const void* gmem, bool valid) {
  if (valid) std::memcpy(smem, gmem, 16);
  else std::memset(smem, 0, 16);
}
inline void commit() {}
inline void wait_all() {}

template <class Mma, class Thr, class SA, class SB, class Acc>
void gemm_ss(Mma&, const Thr& thr, const SA& a, const SB& b, Acc& acc) {
  using namespace cute;
  const Tensor c = thr.partition_C(make_identity_tensor(make_shape(size<0>(a), size<0>(b))));
  for (int e = 0; e < size(acc); ++e) {
    const int i = get<0>(c(e)), j = get<1>(c(e));
    float s = 0.0f;
    for (int k = 0; k < size<1>(a); ++k) s += static_cast<float>(a(i, k)) * static_cast<float>(b(j, k));
    acc(e) = s;
  }
}

// The block's A operand of gemm_rs, gathered from every thread's registers (blocks run one at a time).
inline float rs_operand[kBlockM * kBlockN];

template <class Mma, class Thr, class RA, class SB, class Acc>
void gemm_rs(Mma&, const Thr& thr, RA& a, const SB& b, Acc& acc) {
  using namespace cute;
  const int depth = size<1>(b);
  static_assert(decltype(size<1>(b))::value <= kBlockN, "one walked tile: P V, dS K, P^T dO or dS^T Q");
  const Tensor ca = thr.partition_A(make_identity_tensor(make_shape(Int<kBlockM>{}, size<1>(b))));
  for (int e = 0; e < size(a); ++e) rs_operand[get<0>(ca(e)) * depth + get<1>(ca(e))] = static_cast<float>(a(e));
  __syncthreads();
  const Tensor c = thr.partition_C(make_identity_tensor(make_shape(Int<kBlockM>{}, size<0>(b))));
  for (int e = 0; e < size(acc); ++e) {
    const int i = get<0>(c(e)), j = get<1>(c(e));
    float s = acc(e);
    for (int k = 0; k < depth; ++k) s += rs_operand[i * depth + k] * static_cast<float>(b(j, k));
    acc(e) = s;
  }
  __syncthreads();
}

}  // namespace attnlab::flash::cuda::sm90::ops

namespace attnlab::flash::cuda::sm90 {

// The kernels' dynamic shared memory (blocks run one at a time): the largest block's, with its
// 1 KiB of alignment slack, and room for the forward's bucket values up to value_clip
// kEmulatedValueClip; defined once, in tests/flash_sm90/emulated_shared_memory.cpp.
inline constexpr int kEmulatedValueClip = 64;
inline constexpr int kEmulatedTileBytes =
    Tiles<128>::smem_bytes > BackwardTiles<128>::smem_bytes ? Tiles<128>::smem_bytes : BackwardTiles<128>::smem_bytes;
inline constexpr int kEmulatedSmemBytes = kEmulatedTileBytes + kBlockM * (2 * kEmulatedValueClip + 1) * 4;
extern char sm90_smem[kEmulatedSmemBytes];

}  // namespace attnlab::flash::cuda::sm90
