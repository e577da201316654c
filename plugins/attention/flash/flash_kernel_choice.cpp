#include "flash_kernel_choice.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "attnlab/plugin/kernel_term_math.h"
#include "flash_head_sizes.h"
#include "flash_sm90.h"
#include "flash_tiles.h"

namespace attnlab::flash::cuda {
namespace {

bool aligned16(const void* x) { return reinterpret_cast<std::uintptr_t>(x) % 16 == 0; }

// What both MMA families ask of a problem: bf16, d_k and d_v of MmaHeadSizes, more than one query (a
// decoding step stays on the FMA kernels), and q, k, v and the pass's buffers 16-byte aligned.
Refusal mma_problem(const Problem& p, std::initializer_list<const void*> buffers) {
  if (p.element != Element::bf16) return Refusal::element;
  if (!MmaHeadSizes::has(p.dk) || !MmaHeadSizes::has(p.dv)) return Refusal::head_size;
  if (p.tq < 2) return Refusal::one_query;
  for (const void* x : {p.q, p.k, p.v})
    if (!aligned16(x)) return Refusal::misaligned;
  for (const void* x : buffers)
    if (!aligned16(x)) return Refusal::misaligned;
  return Refusal::none;
}

// The Hopper kernels: sm_90 exactly (sm_90a code runs on no other GPU), the MMA conditions with
// d_k = d_v (the position terms, ALiBi's slopes, bucket scores and values, and dropout they apply
// themselves), built and asked for. The problem comes before the build and the switch, so that a
// reason never names a switch that would not help. The largest of their blocks at the head size
// must fit the device, and the pass's own with the bucket values' shared memory (a large
// value_clip may not fit), so that the forward and the backward of a problem without bucket
// values run on the same family. With score expressions, their kernels compiled for sm_90a (done
// where the switch asks for the family), and no bucket values (NVRTC compiles their variant
// without them).
Verdict hopper_verdict(const DeviceLimits& d, const BuiltKernels& built, const Problem& p, Pass pass,
                       std::initializer_list<const void*> buffers) {
  if (d.major == 0) return {Refusal::no_limits};
  if (d.major != 9 || d.minor != 0) return {Refusal::architecture};
  if (const Refusal r = mma_problem(p, buffers); r != Refusal::none) return {r};
  if (p.dk != p.dv) return {Refusal::unequal_heads};
  if (!built.hopper_built) return {Refusal::not_built};
  if (!built.hopper_opted_in) return {Refusal::not_opted_in};
  if (p.expr && p.bucket_values) return {Refusal::bucket_terms};
  if (p.expr && !p.expr_hopper) return {Refusal::expressions};
  const int i = MmaHeadSizes::index(p.dk);
  const std::size_t forward = built.hopper_forward[i], backward = built.hopper_backward[i];
  if (forward == 0 || backward == 0) return {Refusal::not_built};
  const std::size_t own = (pass == Pass::forward ? forward : backward) + sm90_value_smem(p);
  const std::size_t largest = std::max(own, pass == Pass::forward ? backward : forward);
  if (largest > d.smem_optin) return {Refusal::shared_memory, largest};
  return {Refusal::none, own};
}

// The tensor-core kernels: sm_80 and newer, the MMA conditions, no bucketed position terms (the
// FMA kernels apply them; ALiBi's slopes the tensor-core kernels apply themselves), with score
// expressions their kernels compiled, and the pass's block fits the device.
Verdict tensor_core_verdict(const DeviceLimits& d, const BuiltKernels& built, const Problem& p, Pass pass,
                            std::initializer_list<const void*> buffers) {
  if (d.major == 0) return {Refusal::no_limits};
  if (d.major < 8) return {Refusal::architecture};
  if (const Refusal r = mma_problem(p, buffers); r != Refusal::none) return {r};
  if (p.expr && !p.expr_tc) return {Refusal::expressions};
  if (p.bucket_scores || p.bucket_values) return {Refusal::bucket_terms};
  const int i = MmaHeadSizes::index(p.dk), j = MmaHeadSizes::index(p.dv);
  const std::size_t smem = pass == Pass::forward ? built.tc_forward[i][j] : built.tc_backward[i][j];
  if (smem > d.smem_optin) return {Refusal::shared_memory, smem};
  return {Refusal::none, smem};
}

std::string kib(std::size_t bytes) { return fmt::format("{} KiB", (bytes + 1023) / 1024); }

std::string head_sizes(std::int64_t dk, std::int64_t dv) {
  return dk == dv ? fmt::format("d {}", dk) : fmt::format("d_k {}, d_v {}", dk, dv);
}

const char* pass_name(Pass pass) { return pass == Pass::forward ? "forward" : "backward"; }

// The Hopper kernels' refusal, where it says more than the tensor cores': on an sm_90 device, for
// another reason than theirs (or for their own blocks).
std::string hopper_clause(const KernelChoice& c) {
  const Refusal why = c.hopper.why;
  if (why == Refusal::none || why == Refusal::no_limits || why == Refusal::architecture ||
      (why == c.tensor_cores.why && why != Refusal::shared_memory))
    return "";
  return "; " + refusal_text(c, Kernel::hopper);
}

}  // namespace

KernelChoice choose_kernel(const DeviceLimits& device, const BuiltKernels& built, const Problem& p, Pass pass,
                           std::initializer_list<const void*> buffers) {
  KernelChoice c;
  c.pass = pass;
  c.dk = p.dk;
  c.dv = p.dv;
  c.device = device;
  c.hopper = hopper_verdict(device, built, p, pass, buffers);
  c.tensor_cores = tensor_core_verdict(device, built, p, pass, buffers);
  if (c.hopper.takes()) c.kernel = Kernel::hopper;
  else if (c.tensor_cores.takes()) c.kernel = Kernel::tensor_cores;
  else c.kernel = CudaHeadSizes::has(p.dk) && CudaHeadSizes::has(p.dv) ? Kernel::fma : Kernel::none;
  return c;
}

const char* kernel_name(Kernel k) {
  switch (k) {
    case Kernel::hopper: return "Hopper's warpgroup MMA (sm_90a)";
    case Kernel::tensor_cores: return "tensor cores (WMMA)";
    case Kernel::fma: return "FMA kernels";
    case Kernel::none: break;
  }
  return "no kernel";
}

std::string refusal_text(const KernelChoice& c, Kernel family) {
  const Verdict& v = family == Kernel::hopper ? c.hopper : c.tensor_cores;
  const char* kernels = family == Kernel::hopper ? "Hopper" : "tensor-core";
  const DeviceLimits& d = c.device;
  switch (v.why) {
    case Refusal::none: return "";
    case Refusal::no_limits: return "the GPU's limits could not be read";
    case Refusal::architecture:
      if (family == Kernel::hopper) return fmt::format("sm_{}{} runs no sm_90a code (sm_90 only)", d.major, d.minor);
      return fmt::format("sm_{}{} has no bf16 tensor-core MMA (sm_80 and newer)", d.major, d.minor);
    case Refusal::not_built:
      return "the Hopper kernels are not in this build (no CUTLASS: cmake's ATTNLAB_CUTLASS_DIR)";
    case Refusal::not_opted_in: return "the Hopper kernels are off until ATTNLAB_FLASH_SM90=1";
    case Refusal::element: return fmt::format("f32 has no {} kernel", kernels);
    case Refusal::head_size:
      return fmt::format("head sizes d_k {}, d_v {} have no {} kernel ({} do)", c.dk, c.dv, kernels,
                         MmaHeadSizes::text());
    case Refusal::unequal_heads: return fmt::format("d_k {} != d_v {} has no Hopper kernel", c.dk, c.dv);
    case Refusal::one_query: return fmt::format("a single query (a decoding step) has no {} kernel", kernels);
    case Refusal::bucket_terms:
      return family == Kernel::hopper ? "score expressions with relative positions' bucket values have no Hopper kernel"
                                      : "relative positions' bucket terms have no tensor-core kernel";
    case Refusal::expressions: return fmt::format("score expressions were not compiled into the {} kernels", kernels);
    case Refusal::misaligned:
      return fmt::format("a tensor is not 16-byte aligned, as the {} kernels' vector loads need", kernels);
    case Refusal::shared_memory:
      if (family == Kernel::hopper)
        return fmt::format("the largest Hopper block needs {} of shared memory, the GPU gives {}", kib(v.smem),
                           kib(d.smem_optin));
      return fmt::format("the tensor-core {} block needs {} of shared memory, the GPU gives {}", pass_name(c.pass),
                         kib(v.smem), kib(d.smem_optin));
  }
  return "";
}

std::string KernelChoice::reason() const { return fmt::format("{}: {}", kernel_name(kernel), why()); }

std::string KernelChoice::why() const {
  const DeviceLimits& d = device;
  switch (kernel) {
    case Kernel::hopper:
      return fmt::format("sm_90, bf16 {}, its {} block ({}) fits the GPU's {}", head_sizes(dk, dv), pass_name(pass),
                         kib(hopper.smem), kib(d.smem_optin));
    case Kernel::tensor_cores:
      return fmt::format("sm_{}{}, bf16 {}, its {} block ({}) fits the GPU's {}{}", d.major, d.minor,
                         head_sizes(dk, dv), pass_name(pass), kib(tensor_cores.smem), kib(d.smem_optin),
                         hopper_clause(*this));
    case Kernel::fma: return refusal_text(*this, Kernel::tensor_cores) + hopper_clause(*this);
    case Kernel::none: break;
  }
  return fmt::format("head sizes d_k {}, d_v {} are not compiled for CUDA ({} are)", dk, dv, CudaHeadSizes::text());
}

std::int64_t value_share_floats(const KernelChoice& c, const Problem& p) {
  if (!p.bucket_values) return 0;
  if (c.kernel == Kernel::hopper) return sm90_value_scratch_floats(p);
  if (c.kernel != Kernel::fma) return 0;  // the tensor cores take no bucket values
  const std::int64_t key_tiles = (p.tk + kTileKeys - 1) / kTileKeys;
  return p.batch * p.heads * key_tiles * terms::bucket_count(p.value_clip) * p.dv;
}

}  // namespace attnlab::flash::cuda
