// Launchers of the flash backward kernels: delta, then dq, then dk/dv (flash_backward_kernels.cuh;
// dq and dk/dv from flash_tc_backward_kernels.cuh where uses_tensor_cores() says so).
#include "flash_launch.cuh"
// The launch header has included the CUDA API the kernels use.
#include "flash_backward_kernels.cuh"
#include "flash_tc_backward_kernels.cuh"

namespace attnlab::flash::cuda {
namespace {

using kernels::delta_kernel;
using kernels::dkdv_kernel;
using kernels::dkdv_smem_floats;
using kernels::dq_kernel;
using kernels::dq_smem_floats;

template <typename T, int DK, int DV>
int launch_backward(const Problem& p, const void* dout, const float* lse, const float* delta, void* dq, void* dk,
                    void* dv) {
  const kernels::BackwardInputs<T> in = backward_inputs_of<T>(p, dout, lse, delta);
  if (p.tq > 0) {
    const kernels::Grid g = kernels::query_tile_grid(p.batch * p.heads, p.tq);
    const int status = launch(dq_kernel<T, DK, DV>, dim3(g.x, g.y), kThreads, dq_smem_floats<DK, DV>() * sizeof(float),
                              p.stream, in, static_cast<T*>(dq));
    if (status != 0) return status;
  }
  if (p.tk > 0) {
    const kernels::Grid g = kernels::key_tile_grid(p.batch * p.heads, p.tk);
    return launch(dkdv_kernel<T, DK, DV>, dim3(g.x, g.y), kThreads, dkdv_smem_floats<DK, DV>() * sizeof(float),
                  p.stream, in, static_cast<T*>(dk), static_cast<T*>(dv));
  }
  return 0;
}

template <int DK, int DV>
int launch_tc_backward(const Problem& p, const void* dout, const float* lse, const float* delta, void* dq, void* dk,
                       void* dv) {
  using Bf16 = __nv_bfloat16;
  const kernels::BackwardInputs<Bf16> in = backward_inputs_of<Bf16>(p, dout, lse, delta);
  const kernels::Grid gq = tc::query_tile_grid(p.batch * p.heads, p.tq);  // tq >= 2 here
  const int status = launch(tc::dq_kernel<DK, DV>, dim3(gq.x, gq.y), tc::kThreads, tc::DqSmem<DK, DV>::bytes, p.stream,
                            in, static_cast<Bf16*>(dq));
  if (status != 0 || p.tk == 0) return status;
  const kernels::Grid gk = tc::key_tile_grid(p.batch * p.heads, p.tk);
  return launch(tc::dkdv_kernel<DK, DV>, dim3(gk.x, gk.y), tc::kThreads, tc::DkdvSmem<DK, DV>::bytes, p.stream, in,
                static_cast<Bf16*>(dk), static_cast<Bf16*>(dv));
}

}  // namespace

int backward(const Problem& p, const void* out, const float* lse, const void* dout, float* delta, void* dq, void* dk,
             void* dv) {
  if (p.batch * p.heads == 0) return 0;
  const cudaError_t status = cudaSetDevice(p.device);
  if (status != cudaSuccess) return static_cast<int>(status);
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
    if (uses_tensor_cores(p, {out, dout, dq, dk, dv}))
      return with_tc_head_dims(p.dk, p.dv, [&](auto dk_c, auto dv_c) {
        return launch_tc_backward<decltype(dk_c)::value, decltype(dv_c)::value>(p, dout, lse, delta, dq, dk, dv);
      });
    return with_head_dims(p.dk, p.dv, [&](auto dk_c, auto dv_c) {
      return launch_backward<T, decltype(dk_c)::value, decltype(dv_c)::value>(p, dout, lse, delta, dq, dk, dv);
    });
  });
}

}  // namespace attnlab::flash::cuda
