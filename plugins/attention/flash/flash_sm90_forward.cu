// Launcher of the Hopper flash forward (flash_sm90_forward_kernel.cuh), compiled for sm_90a only,
// in its own translation unit: CuTe makes it the slowest file of the build to compile.
#include "flash_launch.cuh"
// The launch header has included the CUDA API the kernel uses.
#include "flash_sm90.h"
#include "flash_sm90_ops.cuh"
#include "flash_sm90_forward_kernel.cuh"

namespace attnlab::flash::cuda {
namespace {

template <int D>
int launch_sm90_forward(const Problem& p, void* out, float* lse) {
  using Bf16 = __nv_bfloat16;
  const dim3 grid(static_cast<unsigned>(p.batch * p.heads),
                  static_cast<unsigned>((p.tq + sm90::kBlockM - 1) / sm90::kBlockM));
  static_assert(sm90::kBlockM == 128, "sm90_value_smem and sm90_query_blocks (flash_sm90.h) count 128 queries");
  auto kernel = p.bucket_values  ? sm90::forward_kernel<D, true, true>
                : sm90_extras(p) ? sm90::forward_kernel<D, true, false>
                                 : sm90::forward_kernel<D, false, false>;
  // With score expressions, their kExtras variant as NVRTC compiled it (choose_kernel takes no
  // bucket values with them).
  return launch_either(p.expr ? p.expr_hopper.forward : nullptr, kernel, grid, sm90::kThreads,
                       sm90::Tiles<D>::smem_bytes + sm90_value_smem(p), p.stream, inputs_of<Bf16>(p),
                       static_cast<Bf16*>(out), lse);
}

}  // namespace

bool sm90_built() { return true; }

std::size_t sm90_forward_smem(std::int64_t d) {
  return MmaHeadSizes::with(d, std::size_t{0},
                            [](auto d_c) { return std::size_t{sm90::Tiles<decltype(d_c)::value>::smem_bytes}; });
}

int sm90_forward(const Problem& p, void* out, float* lse) {
  return MmaHeadSizes::with(p.dk, kNoHeadSize,
                            [&](auto d) { return launch_sm90_forward<decltype(d)::value>(p, out, lse); });
}

}  // namespace attnlab::flash::cuda
