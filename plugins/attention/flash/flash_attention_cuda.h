#pragma once
// Launchers of the flash kernels (flash_forward_cuda.cu, flash_backward_cuda.cu), with plain types
// only, so that flash_attention_host_cuda.cpp calls them without CUDA headers. Every launcher
// returns 0 on success or the CUDA error code (error_string names it); pointers are device
// pointers on `device`, tensors row-major and contiguous. Every kernel is queued on `stream` (the
// core's stream of the device, attnlab::cuda_stream), so that it is ordered with the core's work.
#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "attnlab/expr/device_abi.h"

struct CUstream_st;  // cudaStream_t without the CUDA headers

namespace attnlab::flash::cuda {

enum class Element : std::uint8_t { f32, bf16 };

// The forward, dq and dk/dv kernels of one family that NVRTC compiled with a site's score
// expressions (cudaKernel_t handles of a loaded library); null where not compiled.
struct CompiledKernels {
  const void* forward = nullptr;
  const void* dq = nullptr;
  const void* dkdv = nullptr;
  explicit operator bool() const { return forward && dq && dkdv; }
};

struct Problem {
  Element element = Element::f32;
  std::int64_t batch = 0, heads = 0, tq = 0, tk = 0, dk = 0, dv = 0;
  const void* q = nullptr;                    // [B, H, Tq, dk] of `element`
  const void* k = nullptr;                    // [B, H, Tk, dk]
  const void* v = nullptr;                    // [B, H, Tk, dv]
  const void* mask = nullptr;                 // [B, Tk] additive, or null
  const std::int32_t* key_lengths = nullptr;  // [B], or null (every key is real)
  bool causal = false;
  float scale = 1.0f;
  double dropout = 0.0;
  std::uint64_t seed = 0, offset = 0;
  const std::uint64_t* seed_slot = nullptr;  // device memory, read instead of seed when set
  // Position terms in kernel form (attnlab/plugin/kernel_terms.h), queries at positions
  // tk - tq + i: a distance bias with f32 slopes [H], bucket scores [B, H, Tq, 2 score_clip + 1]
  // and bucket values [2 value_clip + 1, dv] of `element`; null when absent.
  const float* slopes = nullptr;
  const void* bucket_scores = nullptr;
  std::int64_t score_clip = 0;
  const void* bucket_values = nullptr;
  std::int64_t value_clip = 0;
  // Score expressions (attnlab/expr/device_abi.h): what their code reads, and the kernels NVRTC
  // compiled with it for this element type and these head sizes, per family: the FMA kernels', the
  // tensor-core kernels' for bf16 at head sizes of MmaHeadSizes, the Hopper kernels' for those with
  // d_k = d_v on sm_90 where they are asked for (null otherwise); all null without expressions.
  const expr::DeviceArgs* expr = nullptr;
  CompiledKernels expr_fma, expr_tc, expr_hopper;
  int device = 0;
  CUstream_st* stream = nullptr;
  bool has_terms() const { return slopes || bucket_scores || bucket_values; }
};

// Where the backward writes the gradients of the position terms: the bucket scores' (like them)
// and the bucket values' (like them), each null when the problem has none, and f32 scratch of
// value_share_floats(choice, p) floats (flash_kernel_choice.h) for the per-block shares of the
// latter (and, on Hopper, for dout . V per query and bucket: sm90_value_scratch_floats in
// flash_sm90.h).
struct TermGrads {
  void* d_bucket_scores = nullptr;
  void* d_bucket_values = nullptr;
  float* value_shares = nullptr;
};
// The bucket values' gradient into terms.d_bucket_values (the problem's element type): the
// `blocks` shares of 2 value_clip + 1 rows of dv floats at `shares` added in block order (none:
// zeros). The FMA and Hopper backwards both end with it; 0 or the CUDA error code.
int sum_value_shares(const Problem& p, const float* shares, std::int64_t blocks, void* d_bucket_values);

// What a device offers a block: its compute capability, and the dynamic shared memory a block
// may opt in to (cudaDevAttrMaxSharedMemoryPerBlockOptin: 227 KiB on sm_90, 163 KiB on sm_80,
// 99 KiB on sm_86 and sm_89).
struct DeviceLimits {
  int major = 0, minor = 0;
  std::size_t smem_optin = 0;
};
// The limits of CUDA device `device`, read from the driver once per device.
DeviceLimits device_limits(int device);

// The dynamic shared memory of the tensor-core blocks at head sizes dk, dv: the forward's, and the
// larger of the backward's two kernels; 0 for head sizes they do not take (only 64 and 128).
// built_kernels() (flash_kernel_choice.h) reads them.
std::size_t tc_forward_smem(std::int64_t dk, std::int64_t dv);
std::size_t tc_backward_smem(std::int64_t dk, std::int64_t dv);

struct KernelChoice;  // flash_kernel_choice.h

// forward() and backward() run the kernels of `choice`, the pass's choice for `p`
// (choose_on_device, flash_kernel_choice.h), which their caller makes once per call and also
// sizes the backward's scratch with (another pass's choice: cudaErrorInvalidValue).
// out [B, H, Tq, dv] of `element`, lse [B, H, Tq] f32.
int forward(const KernelChoice& choice, const Problem& p, void* out, float* lse);
// dq, dk, dv like q, k, v; delta [B, H, Tq] f32 scratch (rowsum(dout * out)); the position
// terms' gradients in `terms`.
int backward(const KernelChoice& choice, const Problem& p, const void* out, const float* lse, const void* dout,
             float* delta, void* dq, void* dk, void* dv, const TermGrads& terms = {});
// lengths [B] i32 from the additive mask [B, Tk] (1 + the last key that is not -inf).
int key_lengths(Element element, const void* mask, std::int64_t batch, std::int64_t tk, std::int32_t* lengths,
                int device, CUstream_st* stream);
const char* error_string(int code);

}  // namespace attnlab::flash::cuda
