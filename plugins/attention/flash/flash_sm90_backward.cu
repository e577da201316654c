// Launchers of the Hopper flash backward (flash_sm90_backward_kernels.cuh), compiled for sm_90a
// only, in their own translation unit (CuTe compiles slowly). backward() has run delta_kernel;
// the bucket values' gradient is added up by sum_value_shares, as in the FMA path.
#include "flash_launch.cuh"
// The launch header has included the CUDA API the kernels use.
#include "flash_sm90.h"
#include "flash_sm90_ops.cuh"
#include "flash_sm90_backward_kernels.cuh"

namespace attnlab::flash::cuda {
namespace {

// The kernels of one variant: dq_kernel (with bucket scores, their gradient, which the launcher
// zeroes first: only entries that visible keys reach are written), then dkdv_kernel; with score
// expressions, those NVRTC compiled (their kExtras variant without values: choose_kernel's rule).
template <int D, bool kExtras, bool kValues>
int launch_sm90_backward(const Problem& p, const kernels::BackwardInputs<__nv_bfloat16>& in, void* dq, void* dk,
                         void* dv, void* d_scores, const float* u, float* shares) {
  using Bf16 = __nv_bfloat16;
  const std::size_t smem = sm90::BackwardTiles<D>::smem_bytes;
  const auto bh = static_cast<unsigned>(p.batch * p.heads);
  if (d_scores) {
    const auto bytes = static_cast<std::size_t>(p.batch * p.heads * p.tq * terms::bucket_count(p.score_clip)) *
                       sizeof(Bf16);
    const cudaError_t zeroed = cudaMemsetAsync(d_scores, 0, bytes, p.stream);
    if (zeroed != cudaSuccess) return static_cast<int>(zeroed);
  }
  const dim3 query_tiles(bh, static_cast<unsigned>((p.tq + sm90::kBlockM - 1) / sm90::kBlockM));
  const CompiledKernels compiled = kExtras && !kValues && p.expr ? p.expr_hopper : CompiledKernels{};
  const int status = launch_either(compiled.dq, sm90::dq_kernel<D, kExtras, kValues>, query_tiles, sm90::kThreads,
                                   smem + sm90_value_smem(p), p.stream, in, static_cast<Bf16*>(dq),
                                   static_cast<Bf16*>(d_scores), u, shares);
  if (status != 0 || p.tk == 0) return status;
  const dim3 key_tiles(bh, static_cast<unsigned>((p.tk + sm90::kBlockM - 1) / sm90::kBlockM));
  return launch_either(compiled.dkdv, sm90::dkdv_kernel<D, kExtras, kValues>, key_tiles, sm90::kThreads, smem,
                       p.stream, in, static_cast<Bf16*>(dk), static_cast<Bf16*>(dv), u);
}

// With bucket values: u = dout . V^T first (in the scratch), the kernels, then their gradient from
// the dQ blocks' shares, added in block order.
template <int D>
int launch_sm90_value_backward(const Problem& p, const kernels::BackwardInputs<__nv_bfloat16>& in, void* dq, void* dk,
                               void* dv, void* d_scores, const TermGrads& terms) {
  using Bf16 = __nv_bfloat16;
  const std::int64_t rows = p.batch * p.heads * p.tq, buckets = terms::bucket_count(p.value_clip);
  float* const u = terms.value_shares;
  float* const shares = u + rows * buckets;
  const kernels::Grid g = kernels::delta_grid(rows);
  sm90::bucket_dots_kernel<D><<<dim3(g.x, g.y), kernels::kThreads, 0, p.stream>>>(
      static_cast<const Bf16*>(in.dout), static_cast<const Bf16*>(p.bucket_values), rows, static_cast<int>(buckets), u);
  int status = static_cast<int>(cudaGetLastError());
  if (status == 0) status = launch_sm90_backward<D, true, true>(p, in, dq, dk, dv, d_scores, u, shares);
  if (status != 0) return status;
  return sum_value_shares(p, shares, sm90_query_blocks(p), terms.d_bucket_values);
}

template <int D>
int launch_sm90_backward(const Problem& p, const void* dout, const float* lse, const float* delta, void* dq, void* dk,
                         void* dv, const TermGrads& terms) {
  const kernels::BackwardInputs<__nv_bfloat16> in = backward_inputs_of<__nv_bfloat16>(p, dout, lse, delta);
  void* const d = p.bucket_scores ? terms.d_bucket_scores : nullptr;
  if (p.bucket_values) return launch_sm90_value_backward<D>(p, in, dq, dk, dv, d, terms);
  if (sm90_extras(p)) return launch_sm90_backward<D, true, false>(p, in, dq, dk, dv, d, nullptr, nullptr);
  return launch_sm90_backward<D, false, false>(p, in, dq, dk, dv, d, nullptr, nullptr);
}

}  // namespace

std::size_t sm90_backward_smem(std::int64_t d) {
  return MmaHeadSizes::with(
      d, std::size_t{0}, [](auto d_c) { return std::size_t{sm90::BackwardTiles<decltype(d_c)::value>::smem_bytes}; });
}

int sm90_backward(const Problem& p, const void* dout, const float* lse, const float* delta, void* dq, void* dk,
                  void* dv, const TermGrads& terms) {
  return MmaHeadSizes::with(p.dk, kNoHeadSize, [&](auto d) {
    return launch_sm90_backward<decltype(d)::value>(p, dout, lse, delta, dq, dk, dv, terms);
  });
}

}  // namespace attnlab::flash::cuda
