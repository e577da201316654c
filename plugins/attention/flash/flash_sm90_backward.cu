// Launchers of the Hopper flash backward (flash_sm90_backward_kernels.cuh), compiled for sm_90a
// only, in their own translation unit (CuTe compiles slowly). backward() has run delta_kernel.
#include "flash_launch.cuh"
// The launch header has included the CUDA API the kernels use.
#include "flash_sm90.h"
#include "flash_sm90_ops.cuh"
#include "flash_sm90_backward_kernels.cuh"

namespace attnlab::flash::cuda {
namespace {

template <int D, bool kExtras>
int launch_sm90_backward(const Problem& p, const kernels::BackwardInputs<__nv_bfloat16>& in, void* dq, void* dk,
                         void* dv, void* d_scores) {
  using Bf16 = __nv_bfloat16;
  constexpr int smem = sm90::BackwardTiles<D>::smem_bytes;
  const auto bh = static_cast<unsigned>(p.batch * p.heads);
  if (d_scores) {  // dq_kernel writes the entries that visible keys reach
    const auto bytes = static_cast<std::size_t>(p.batch * p.heads * p.tq * terms::bucket_count(p.score_clip)) *
                       sizeof(Bf16);
    const cudaError_t zeroed = cudaMemsetAsync(d_scores, 0, bytes, p.stream);
    if (zeroed != cudaSuccess) return static_cast<int>(zeroed);
  }
  const dim3 query_tiles(bh, static_cast<unsigned>((p.tq + sm90::kBlockM - 1) / sm90::kBlockM));
  const int status = launch(sm90::dq_kernel<D, kExtras>, query_tiles, sm90::kThreads, smem, p.stream, in,
                            static_cast<Bf16*>(dq), static_cast<Bf16*>(d_scores));
  if (status != 0 || p.tk == 0) return status;
  const dim3 key_tiles(bh, static_cast<unsigned>((p.tk + sm90::kBlockM - 1) / sm90::kBlockM));
  return launch(sm90::dkdv_kernel<D, kExtras>, key_tiles, sm90::kThreads, smem, p.stream, in, static_cast<Bf16*>(dk),
                static_cast<Bf16*>(dv));
}

template <int D>
int launch_sm90_backward(const Problem& p, const void* dout, const float* lse, const float* delta, void* dq, void* dk,
                         void* dv, void* d_scores) {
  const kernels::BackwardInputs<__nv_bfloat16> in = backward_inputs_of<__nv_bfloat16>(p, dout, lse, delta);
  void* const d = p.bucket_scores ? d_scores : nullptr;
  if (sm90_extras(p)) return launch_sm90_backward<D, true>(p, in, dq, dk, dv, d);
  return launch_sm90_backward<D, false>(p, in, dq, dk, dv, d);
}

}  // namespace

std::size_t sm90_backward_smem(std::int64_t d) {
  if (d == 64) return sm90::BackwardTiles<64>::smem_bytes;
  if (d == 128) return sm90::BackwardTiles<128>::smem_bytes;
  return 0;
}

int sm90_backward(const Problem& p, const void* dout, const float* lse, const float* delta, void* dq, void* dk,
                  void* dv, void* d_bucket_scores) {
  if (p.dk == 64) return launch_sm90_backward<64>(p, dout, lse, delta, dq, dk, dv, d_bucket_scores);
  if (p.dk == 128) return launch_sm90_backward<128>(p, dout, lse, delta, dq, dk, dv, d_bucket_scores);
  return static_cast<int>(cudaErrorInvalidValue);
}

}  // namespace attnlab::flash::cuda
