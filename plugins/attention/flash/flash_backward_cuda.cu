// Launchers of the flash backward kernels: delta, then dq, then dk/dv (flash_backward_kernels.cuh),
// or after delta the tensor-core kernels' dq and dk/dv (flash_tc_backward_kernels.cuh) or the
// Hopper kernels' (flash_sm90.h), as choose_kernel() decides (flash_kernel_choice.h).
#include "flash_launch.cuh"
// The launch header has included the CUDA API the kernels use.
#include "flash_backward_kernels.cuh"
#include "flash_kernel_choice.h"
#include "flash_sm90.h"
#include "flash_tc_backward_kernels.cuh"

namespace attnlab::flash::cuda {
namespace {

using kernels::bucket_values_grad_kernel;
using kernels::delta_kernel;
using kernels::dkdv_kernel;
using kernels::dkdv_smem_floats;
using kernels::dkdv_terms_smem_floats;
using kernels::dq_kernel;
using kernels::dq_smem_floats;
using kernels::dq_terms_smem_floats;

template <typename T, int DK, int DV>
int launch_backward(const Problem& p, const void* dout, const float* lse, const float* delta, void* dq, void* dk,
                    void* dv, const TermGrads& terms) {
  const kernels::BackwardInputs<T> in = backward_inputs_of<T>(p, dout, lse, delta);
  if (p.tq > 0) {
    const kernels::Grid g = kernels::query_tile_grid(p.batch * p.heads, p.tq);
    const std::size_t smem = (dq_smem_floats<DK, DV>() + dq_terms_smem_floats(in.terms)) * sizeof(float);
    const int status = launch_either(p.expr_fma.dq, dq_kernel<T, DK, DV>, dim3(g.x, g.y), kThreads, smem, p.stream,
                                     in, static_cast<T*>(dq), static_cast<T*>(terms.d_bucket_scores));
    if (status != 0) return status;
  }
  const kernels::Grid g = kernels::key_tile_grid(p.batch * p.heads, p.tk);
  if (p.tk > 0) {
    const std::size_t smem = (dkdv_smem_floats<DK, DV>() + dkdv_terms_smem_floats<T, DV>(in.terms)) * sizeof(float);
    const int status = launch_either(p.expr_fma.dkdv, dkdv_kernel<T, DK, DV>, dim3(g.x, g.y), kThreads, smem,
                                     p.stream, in, static_cast<T*>(dk), static_cast<T*>(dv), terms.value_shares);
    if (status != 0) return status;
  }
  if (!p.bucket_values) return 0;
  // The bucket values' gradient: the dkdv blocks' shares.
  return sum_value_shares(p, terms.value_shares, p.tk > 0 ? static_cast<std::int64_t>(g.x) * g.y : 0,
                          terms.d_bucket_values);
}

template <int DK, int DV>
int launch_tc_backward(const Problem& p, const void* dout, const float* lse, const float* delta, void* dq, void* dk,
                       void* dv) {
  using Bf16 = __nv_bfloat16;
  const kernels::BackwardInputs<Bf16> in = backward_inputs_of<Bf16>(p, dout, lse, delta);
  const kernels::Grid gq = tc::query_tile_grid(p.batch * p.heads, p.tq);  // tq >= 2 here
  const int status = launch_either(p.expr_tc.dq, tc::dq_kernel<DK, DV>, dim3(gq.x, gq.y), tc::kThreads,
                                   tc::DqSmem<DK, DV>::bytes, p.stream, in, static_cast<Bf16*>(dq));
  if (status != 0 || p.tk == 0) return status;
  const kernels::Grid gk = tc::key_tile_grid(p.batch * p.heads, p.tk);
  return launch_either(p.expr_tc.dkdv, tc::dkdv_kernel<DK, DV>, dim3(gk.x, gk.y), tc::kThreads,
                       tc::DkdvSmem<DK, DV>::bytes, p.stream, in, static_cast<Bf16*>(dk), static_cast<Bf16*>(dv));
}

}  // namespace

int sum_value_shares(const Problem& p, const float* shares, std::int64_t blocks, void* d_bucket_values) {
  const std::int64_t n = terms::bucket_count(p.value_clip) * p.dv;
  const std::int64_t grid = (n + kThreads - 1) / kThreads;
  return with_element(p.element, [&](auto element) {
    using T = decltype(element);
    bucket_values_grad_kernel<T><<<static_cast<unsigned>(grid < 65535 ? grid : 65535), kThreads, 0, p.stream>>>(
        shares, blocks, n, static_cast<T*>(d_bucket_values));
    return static_cast<int>(cudaGetLastError());
  });
}

std::size_t tc_backward_smem(std::int64_t dk, std::int64_t dv) {
  return MmaHeadSizes::with(dk, dv, std::size_t{0}, [](auto dk_c, auto dv_c) {
    constexpr std::size_t dq_bytes = tc::DqSmem<decltype(dk_c)::value, decltype(dv_c)::value>::bytes;
    constexpr std::size_t dkdv_bytes = tc::DkdvSmem<decltype(dk_c)::value, decltype(dv_c)::value>::bytes;
    return dq_bytes > dkdv_bytes ? dq_bytes : dkdv_bytes;
  });
}

int backward(const KernelChoice& c, const Problem& p, const void* out, const float* lse, const void* dout,
             float* delta, void* dq, void* dk, void* dv, const TermGrads& terms) {
  if (c.pass != Pass::backward) return kNoHeadSize;
  if (p.batch * p.heads == 0) return 0;
  const cudaError_t status = cudaSetDevice(p.device);
  if (status != cudaSuccess) return static_cast<int>(status);
  if (c.kernel == Kernel::none) return kNoHeadSize;
  return with_element(p.element, [&](auto element) {
    using T = decltype(element);
    const std::int64_t rows = p.batch * p.heads * p.tq;
    if (rows > 0) {
      const kernels::Grid g = kernels::delta_grid(rows);
      delta_kernel<T><<<dim3(g.x, g.y), kThreads, 0, p.stream>>>(static_cast<const T*>(out),
                                                                  static_cast<const T*>(dout), rows,
                                                                  static_cast<int>(p.dv), delta);
      const int launched = static_cast<int>(cudaGetLastError());
      if (launched != 0) return launched;
    }
    if (c.kernel == Kernel::hopper) return sm90_backward(p, dout, lse, delta, dq, dk, dv, terms);
    if (c.kernel == Kernel::tensor_cores)
      return MmaHeadSizes::with(c.dk, c.dv, kNoHeadSize, [&](auto dk_c, auto dv_c) {
        return launch_tc_backward<decltype(dk_c)::value, decltype(dv_c)::value>(p, dout, lse, delta, dq, dk, dv);
      });
    return CudaHeadSizes::with(c.dk, c.dv, kNoHeadSize, [&](auto dk_c, auto dv_c) {
      return launch_backward<T, decltype(dk_c)::value, decltype(dv_c)::value>(p, dout, lse, delta, dq, dk, dv,
                                                                             terms);
    });
  });
}

}  // namespace attnlab::flash::cuda
