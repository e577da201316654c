#pragma once
// The Hopper machinery the sm_90a flash forward uses, on the device: asynchronous 16-byte copies
// into shared memory (cp.async) and the two warpgroup MMA products (wgmma), through CuTe. The
// kernel (flash_sm90_forward_kernel.cuh) calls only these, so that a host emulation of them
// (tests/support/cuda_sm90_host_emulation.h) runs the rest of its device code on the CPU.
// Include the CUDA API first; flash_sm90_forward.cu includes this before the kernel.
#include "flash_sm90_layouts.cuh"

namespace attnlab::flash::cuda::sm90::ops {

// Copies 16 bytes from global to shared memory without waiting; `valid` false writes zeros and
// reads nothing (cp.async's source size 0).
__device__ __forceinline__ void copy16(void* smem, const void* gmem, bool valid) {
  cute::SM80_CP_ASYNC_CACHEGLOBAL_ZFILL<cute::uint128_t>::copy(*static_cast<const cute::uint128_t*>(gmem),
                                                                 *static_cast<cute::uint128_t*>(smem), valid);
}
// Closes the group of copies this thread has issued since the last commit.
__device__ __forceinline__ void commit() { cute::cp_async_fence(); }
// Waits until every copy group this thread committed has landed, then orders those writes (made
// through the generic proxy) before the warpgroup MMAs' reads of shared memory (through the async
// proxy): fence.proxy.async. A __syncthreads after it makes them visible to the whole block.
__device__ __forceinline__ void wait_all() {
  cute::cp_async_wait<0>();
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// acc (+)= A B on the warpgroup MMA over every K step, waited for: zero_first starts from 0.
template <class Mma, class TA, class TB, class TC>
__device__ __forceinline__ void warpgroup_gemm(Mma& mma, const TA& a, const TB& b, TC& acc, bool zero_first) {
  cute::warpgroup_fence_operand(acc);
  cute::warpgroup_arrive();
  mma.accumulate_ = zero_first ? cute::GMMA::ScaleOut::Zero : cute::GMMA::ScaleOut::One;
  CUTE_UNROLL
  for (int k = 0; k < cute::size<2>(a); ++k) {
    cute::gemm(mma, a(cute::_, cute::_, k), b(cute::_, cute::_, k), acc);
    mma.accumulate_ = cute::GMMA::ScaleOut::One;
  }
  cute::warpgroup_commit_batch();
  cute::warpgroup_wait<0>();
  cute::warpgroup_fence_operand(acc);
}

// acc = A B^T, A (M x K) and B (N x K) in shared memory, acc this thread's part of M x N (f32).
// Every thread of the block calls it.
template <class Mma, class Thr, class SA, class SB, class Acc>
__device__ __forceinline__ void gemm_ss(Mma& mma, const Thr& thr, const SA& a, const SB& b, Acc& acc) {
  const auto fa = thr.partition_fragment_A(a);  // shared-memory descriptors, one per K step
  const auto fb = thr.partition_fragment_B(b);
  warpgroup_gemm(mma, fa, fb, acc, true);
}

// acc += A B^T, A this thread's registers of M x K in the register-A layout (bf16), B (N x K) in
// shared memory. Every thread of the block calls it.
template <class Mma, class Thr, class RA, class SB, class Acc>
__device__ __forceinline__ void gemm_rs(Mma& mma, const Thr& thr, RA& a, const SB& b, Acc& acc) {
  const auto fb = thr.partition_fragment_B(b);
  cute::warpgroup_fence_operand(a);
  warpgroup_gemm(mma, a, fb, acc, false);
  cute::warpgroup_fence_operand(a);
}

}  // namespace attnlab::flash::cuda::sm90::ops
