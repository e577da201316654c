#pragma once
// Which CUDA kernels serve a flash problem, decided in one place and once per call: the caller of
// forward() and backward() asks choose_on_device() (choose_kernel() on the problem's device), sizes
// the backward's scratch for that choice (value_share_floats()) and hands the same choice to the
// pass, which launches what it says; `attnlab plugins` (describe_cuda_kernels) reports it. The families, best
// first:
//   hopper:       Hopper's warpgroup MMA (flash_sm90_*), sm_90a code: sm_90 exactly, where the
//                 build has it (CUTLASS) and ATTNLAB_FLASH_SM90=1 asks for it;
//   tensor_cores: WMMA (flash_tc_*.cuh), sm_80 and newer;
//   fma:          the FMA kernels (flash_*_kernels.cuh), every device, f32 and bf16.
// The device, the build and the switch are inputs, so that tests ask about any combination of
// them. Plain C++ without CUDA headers or fmt: g++ and nvcc compile it.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "flash_attention_cuda.h"
#include "flash_head_sizes.h"

namespace attnlab::flash::cuda {

enum class Pass : std::uint8_t { forward, backward };

// none: no kernel is compiled for the head sizes (flash_attention refuses them before any kernel).
enum class Kernel : std::uint8_t { hopper, tensor_cores, fma, none };

// Why an MMA family does not take a problem.
enum class Refusal : std::uint8_t {
  none,           // it takes it
  no_limits,      // the device's limits could not be read
  architecture,   // the device predates the family (tensor cores: sm_80; Hopper: sm_90 exactly)
  not_built,      // Hopper: this build has no sm_90a code (CUTLASS was not found)
  not_opted_in,   // Hopper: ATTNLAB_FLASH_SM90=1 is not set
  element,        // f32 (the MMA kernels take bf16)
  head_size,      // d_k or d_v not in MmaHeadSizes (flash_head_sizes.h)
  unequal_heads,  // Hopper: d_k != d_v
  one_query,      // a single query (a decoding step)
  bucket_terms,   // tensor cores: relative positions' bucket scores or values; Hopper: bucket values with score expressions
  expressions,    // score expressions not compiled into the family's kernels (NVRTC, for the device's architecture)
  misaligned,     // an input, output or gradient not 16-byte aligned (their vector loads)
  shared_memory,  // its blocks ask for more shared memory than the device lets a block have
};

// An MMA family's answer for a problem: whether it takes it (why == none) and the dynamic shared
// memory (bytes) its blocks ask for: the pass's block when it takes it, the block that does not
// fit when that is why, else 0.
struct Verdict {
  Refusal why = Refusal::none;
  std::size_t smem = 0;
  bool takes() const { return why == Refusal::none; }
};

// What this build offers: whether it has the Hopper kernels and ATTNLAB_FLASH_SM90=1 asks for
// them, and the dynamic shared memory (bytes) of the MMA kernels' blocks at each of MmaHeadSizes
// (index MmaHeadSizes::index(d)), 0 where not built. The backward's entries are the larger of its
// two blocks (the Hopper backward's two have one size; its dQ block and the forward's add
// sm90_value_smem for bucket values).
struct BuiltKernels {
  bool hopper_built = false, hopper_opted_in = false;
  static constexpr std::size_t n = MmaHeadSizes::count;
  std::size_t hopper_forward[n] = {}, hopper_backward[n] = {};  // d_k = d_v
  std::size_t tc_forward[n][n] = {}, tc_backward[n][n] = {};    // [d_k][d_v]
};

// The kernel for one pass of one problem, the template variant it runs (its head sizes) and why:
// each MMA family's verdict, and the device's limits they were decided on.
struct KernelChoice {
  Kernel kernel = Kernel::none;
  Pass pass = Pass::forward;
  std::int64_t dk = 0, dv = 0;
  Verdict hopper, tensor_cores;
  DeviceLimits device;
  // One line: the kernels and why ("FMA kernels: f32 has no tensor-core kernel"), and the why
  // alone. Made on request: forward() and backward() ask for the choice on every call.
  std::string reason() const;
  std::string why() const;
};

// The kernel for pass `pass` of `p` on a device with limits `device`: Hopper's where it takes the
// problem, else the tensor cores' where they do, else the FMA kernels (none for head sizes no
// kernel is compiled for). `buffers` are the pass's pointers besides q, k and v, whose alignment
// the MMA kernels need: the forward's out; the backward's out, dout, dq, dk and dv.
KernelChoice choose_kernel(const DeviceLimits& device, const BuiltKernels& built, const Problem& p, Pass pass,
                           std::initializer_list<const void*> buffers);

// choose_kernel() for `p` on its own device (its limits read from the driver) with this build's
// kernels (CUDA builds: flash_forward_cuda.cu).
KernelChoice choose_on_device(const Problem& p, Pass pass, std::initializer_list<const void*> buffers);

// The family's name as the report and the reasons print it ("tensor cores (WMMA)").
const char* kernel_name(Kernel k);
// Why an MMA family (hopper or tensor_cores) did not take the choice's problem, in words; empty
// where it did.
std::string refusal_text(const KernelChoice& c, Kernel family);

// Floats of TermGrads::value_shares that the backward `c` chose needs for `p`: 0 without bucket
// values; on Hopper, u and the dQ blocks' shares (sm90_value_scratch_floats); on the FMA kernels,
// one share (buckets x d_v) per dK/dV block of kTileKeys keys.
std::int64_t value_share_floats(const KernelChoice& c, const Problem& p);

// This build's kernels: its Hopper kernels and switch (flash_sm90.h) and the blocks of its
// kernels' templates, read once (CUDA builds: flash_forward_cuda.cu).
BuiltKernels built_kernels();

}  // namespace attnlab::flash::cuda
