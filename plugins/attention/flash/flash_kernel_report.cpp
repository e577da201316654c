#include "flash_kernel_report.h"

#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace attnlab::flash {
namespace {

using cuda::Kernel;
using cuda::KernelChoice;
using cuda::Pass;
using cuda::Refusal;

// A problem the report asks about: bf16 at d_k = d_v = d, two queries, 16-byte aligned tensors
// (the core's allocations are); with `relative`, bucket scores and values at clip 1.
cuda::Problem probe(std::int64_t d, bool relative) {
  alignas(16) static const unsigned char tensor[16] = {};
  cuda::Problem p;
  p.element = cuda::Element::bf16;
  p.batch = p.heads = 1;
  p.tq = p.tk = 2;
  p.dk = p.dv = d;
  p.q = p.k = p.v = tensor;
  if (relative) {
    p.bucket_scores = p.bucket_values = tensor;
    p.score_clip = p.value_clip = 1;
  }
  return p;
}

struct Passes {
  KernelChoice forward, backward;
  bool on(Kernel k) const { return forward.kernel == k && backward.kernel == k; }
};
Passes choices(const cuda::DeviceLimits& d, const cuda::BuiltKernels& built, std::int64_t size, bool relative) {
  const cuda::Problem p = probe(size, relative);
  return {cuda::choose_kernel(d, built, p, Pass::forward, {p.q}),
          cuda::choose_kernel(d, built, p, Pass::backward, {p.q, p.q, p.q, p.q, p.q})};
}

// The kernels of both passes, and why a pass runs on worse ones than the other (or, on the FMA
// kernels, why not on the tensor cores).
std::string describe_passes(const Passes& c) {
  const KernelChoice &f = c.forward, &b = c.backward;
  if (f.kernel == b.kernel) {
    if (f.kernel != Kernel::fma) return fmt::format("{}, forward and backward", cuda::kernel_name(f.kernel));
    const KernelChoice& larger = b.tensor_cores.smem > f.tensor_cores.smem ? b : f;
    return fmt::format("FMA kernels ({})", larger.why());
  }
  const bool forward_better = f.kernel < b.kernel;
  return fmt::format("{} forward, {} backward ({})", cuda::kernel_name(f.kernel), cuda::kernel_name(b.kernel),
                     cuda::refusal_text(forward_better ? b : f, forward_better ? f.kernel : b.kernel));
}

// Why the Hopper kernels run nowhere on an sm_90 device.
std::string hopper_off(const KernelChoice& c) {
  switch (c.hopper.why) {
    case Refusal::not_built:
      return "Hopper's warpgroup MMA kernels are not in this build (no CUTLASS: cmake's ATTNLAB_CUTLASS_DIR); "
             "the sm_80 kernels run";
    case Refusal::not_opted_in:
      return "Hopper's warpgroup MMA kernels are built but off until ATTNLAB_FLASH_SM90=1 (their parity is "
             "checked by bench/gpu_checks.sh's sm90 phase); the sm_80 kernels run";
    default: break;
  }
  return fmt::format("Hopper's warpgroup MMA kernels: {}; the sm_80 kernels run",
                     cuda::refusal_text(c, Kernel::hopper));
}

}  // namespace

std::string describe_cuda_kernels(const cuda::DeviceLimits& d, const cuda::BuiltKernels& built) {
  const Passes at64 = choices(d, built, 64, false);
  const Refusal tensor_cores = at64.forward.tensor_cores.why;
  if (at64.on(Kernel::fma) && (tensor_cores == Refusal::no_limits || tensor_cores == Refusal::architecture))
    return cuda::refusal_text(at64.forward, Kernel::tensor_cores) + ": every problem on the FMA kernels";

  std::vector<std::string> parts;
  bool hopper = false;
  for (std::int64_t size : {64, 128}) {
    const Passes c = size == 64 ? at64 : choices(d, built, size, false);
    parts.push_back(fmt::format("bf16 d {}: {}", size, describe_passes(c)));
    hopper = hopper || c.forward.kernel == Kernel::hopper || c.backward.kernel == Kernel::hopper;
  }
  const Passes relative = choices(d, built, 64, true);
  std::vector<std::string> fma = {"f32", "other head sizes"};
  if (!relative.on(Kernel::hopper)) fma.push_back("bucketed position terms (relative)");
  parts.push_back(fmt::format("{} and single-query steps: FMA kernels", fmt::join(fma, ", ")));
  if (hopper)
    parts.push_back(fmt::format("Hopper's warpgroup MMA (ATTNLAB_FLASH_SM90=1) at d_k = d_v takes masks, dropout, "
                                "ALiBi{} too",
                                relative.on(Kernel::hopper) ? " and relative positions" : ""));
  else if (at64.forward.hopper.why != Refusal::architecture)
    parts.push_back(hopper_off(at64.forward));
  return fmt::format("{}", fmt::join(parts, "; "));
}

}  // namespace attnlab::flash
