// Launchers of the flash forward kernels: the FMA kernel (flash_forward_kernels.cuh), the
// tensor-core bf16 kernel (flash_tc_forward_kernels.cuh) or the Hopper kernel (flash_sm90.h), as
// choose_kernel() decides (flash_kernel_choice.h); the key lengths kernel; the devices' limits and
// what this build's kernels ask of them (built_kernels).
#include <map>
#include <mutex>

#include "flash_launch.cuh"
// The launch header has included the CUDA API the kernels use.
#include "flash_forward_kernels.cuh"
#include "flash_kernel_choice.h"
#include "flash_sm90.h"
#include "flash_tc_forward_kernels.cuh"

namespace attnlab::flash::cuda {
namespace {

using kernels::forward_kernel;
using kernels::forward_smem_floats;
using kernels::key_lengths_kernel;

template <typename T, int DK, int DV>
int launch_forward(const Problem& p, void* out, float* lse) {
  const kernels::Grid g = kernels::query_tile_grid(p.batch * p.heads, p.tq);
  const std::size_t smem = forward_smem_floats<DK, DV>() * sizeof(float);
  return launch_either(p.expr_fma.forward, forward_kernel<T, DK, DV>, dim3(g.x, g.y), kThreads, smem, p.stream,
                       inputs_of<T>(p), static_cast<T*>(out), lse);
}

template <int DK, int DV>
int launch_tc_forward(const Problem& p, void* out, float* lse) {
  using Bf16 = __nv_bfloat16;
  const kernels::Grid g = tc::query_tile_grid(p.batch * p.heads, p.tq);
  return launch_either(p.expr_tc.forward, tc::forward_kernel<DK, DV>, dim3(g.x, g.y), tc::kThreads,
                       tc::ForwardSmem<DK, DV>::bytes, p.stream, inputs_of<Bf16>(p), static_cast<Bf16*>(out), lse);
}

}  // namespace

DeviceLimits device_limits(int device) {
  static std::mutex mutex;
  static std::map<int, DeviceLimits> known;
  std::lock_guard lock(mutex);
  auto it = known.find(device);
  if (it != known.end()) return it->second;
  DeviceLimits d;
  int optin = 0;
  // Unknown limits (a failing query) leave major 0: the FMA kernels, which need no opt-in above
  // what every device since sm_70 allows.
  if (cudaDeviceGetAttribute(&d.major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&d.minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess) {
    cudaGetLastError();
    d = DeviceLimits{};
  }
  d.smem_optin = static_cast<std::size_t>(optin);
  return known.emplace(device, d).first->second;
}

std::size_t tc_forward_smem(std::int64_t dk, std::int64_t dv) {
  return MmaHeadSizes::with(dk, dv, std::size_t{0}, [](auto dk_c, auto dv_c) {
    return std::size_t{tc::ForwardSmem<decltype(dk_c)::value, decltype(dv_c)::value>::bytes};
  });
}

BuiltKernels built_kernels() {
  static const BuiltKernels built = [] {
    BuiltKernels b;
    b.hopper_built = sm90_built();
    b.hopper_opted_in = sm90_opted_in();
    for (std::size_t i = 0; i < MmaHeadSizes::count; ++i) {
      const std::int64_t dk = MmaHeadSizes::list[i];
      b.hopper_forward[i] = sm90_forward_smem(dk);
      b.hopper_backward[i] = sm90_backward_smem(dk);
      for (std::size_t j = 0; j < MmaHeadSizes::count; ++j) {
        b.tc_forward[i][j] = tc_forward_smem(dk, MmaHeadSizes::list[j]);
        b.tc_backward[i][j] = tc_backward_smem(dk, MmaHeadSizes::list[j]);
      }
    }
    return b;
  }();
  return built;
}

KernelChoice choose_on_device(const Problem& p, Pass pass, std::initializer_list<const void*> buffers) {
  return choose_kernel(device_limits(p.device), built_kernels(), p, pass, buffers);
}

int forward(const KernelChoice& c, const Problem& p, void* out, float* lse) {
  if (c.pass != Pass::forward) return kNoHeadSize;
  if (p.batch * p.heads == 0 || p.tq == 0) return 0;
  const cudaError_t status = cudaSetDevice(p.device);
  if (status != cudaSuccess) return static_cast<int>(status);
  switch (c.kernel) {
    case Kernel::hopper: return sm90_forward(p, out, lse);
    case Kernel::tensor_cores:
      return MmaHeadSizes::with(c.dk, c.dv, kNoHeadSize, [&](auto dk, auto dv) {
        return launch_tc_forward<decltype(dk)::value, decltype(dv)::value>(p, out, lse);
      });
    case Kernel::fma:
      return with_element(p.element, [&](auto element) {
        using T = decltype(element);
        return CudaHeadSizes::with(c.dk, c.dv, kNoHeadSize, [&](auto dk, auto dv) {
          return launch_forward<T, decltype(dk)::value, decltype(dv)::value>(p, out, lse);
        });
      });
    case Kernel::none: break;
  }
  return kNoHeadSize;
}

int key_lengths(Element element, const void* mask, std::int64_t batch, std::int64_t tk, std::int32_t* lengths,
                int device, CUstream_st* stream) {
  if (batch == 0) return 0;
  const cudaError_t status = cudaSetDevice(device);
  if (status != cudaSuccess) return static_cast<int>(status);
  return with_element(element, [&](auto e) {
    using T = decltype(e);
    const kernels::Grid g = kernels::key_lengths_grid(batch);
    key_lengths_kernel<T><<<dim3(g.x, g.y), kThreads, 0, stream>>>(static_cast<const T*>(mask), batch, tk, lengths);
    return static_cast<int>(cudaGetLastError());
  });
}

const char* error_string(int code) { return cudaGetErrorString(static_cast<cudaError_t>(code)); }

}  // namespace attnlab::flash::cuda
