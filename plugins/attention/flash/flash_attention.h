#pragma once
// The attention core of the `flash` plugin as one differentiable op:
//   O = W (V + value terms),  W = dropout(softmax(scale * Q K^T + score terms + mask)),
// computed tile by tile with an online softmax, so that the [Tq, Tk] score matrix of a head is
// never stored (Dao et al., FlashAttention, 2022; FlashAttention-2, 2023). The forward keeps O and
// the per-row logsumexp; the backward recomputes the probabilities tile by tile from them. Position
// terms enter in kernel form (attnlab/plugin/kernel_terms.h), computed inside the tiles.
#include <cstdint>
#include <memory>
#include <string>

#include "attnlab/expr/score_call.h"
#include "attnlab/plugin/kernel_terms.h"
#include "attnlab/precision.h"
#include "attnlab/tensor.h"
#include "flash_head_sizes.h"
#include "flash_tiles.h"

namespace attnlab::flash {

struct FlashOptions {
  // Additive key padding mask [B, Tk] of q's dtype: 0 for a real key, -inf for padding (other
  // finite values are added to the scores as they are). Undefined: no mask.
  Tensor key_padding_mask{};
  // Per-batch key lengths [B] (i32 or i64, on q's device): keys j >= length are padding. Either
  // this or the mask (or both); without it, the lengths are derived from the mask (the last key
  // that is not -inf), so that tiles past a row's last real key are skipped.
  Tensor key_lengths{};
  // Query i sees key j only when j <= i + (Tk - Tq).
  bool causal = false;
  // Multiplies Q K^T (1 / sqrt(d_k) for scaled dot-product attention).
  double scale = 1.0;
  // Dropout on the attention weights, in [0, 1). Weight (b, h, i, j) is kept when the Philox
  // uniform of (seed, offset, ((b H + h) Tq + i) Tk + j) is >= p, and a kept weight is scaled by
  // 1 / (1 - p): the same mask that attnlab::dropout(weights, p, seed, offset) draws on the
  // [B, H, Tq, Tk] weights tensor, on every backend.
  double dropout = 0.0;
  std::uint64_t seed = 0;
  std::uint64_t offset = 0;
  // When set, the kernels read the seed here instead (q's device memory; the host's on the CPU):
  // philox::SeedRef, for work that a captured graph replays with each batch's seed.
  const std::uint64_t* seed_slot = nullptr;
  // Position terms in kernel form, with the queries at positions Tk - Tq .. Tk - 1 and the keys
  // at 0 .. Tk - 1 (so Tq <= Tk): a distance bias, bucket scores [B, H, Tq, 2 clip + 1] of q's
  // dtype, and bucket values [2 clip + 1, d_v] of q's dtype; the op is differentiable in the
  // bucket scores and values. On CUDA the bucketed terms run on the FMA kernels; the distance
  // bias alone also runs on the tensor-core kernels (docs/plugins.md).
  KernelScoreTerms score_terms{};
  KernelValueTerms value_terms{};
  // Score expressions (attnlab/expr/score_call.h), applied to each score after the position terms
  // and before the mask, queries at the call's q_offset; the op is differentiable in their
  // tensors. On CUDA they run on the FMA kernels, compiled by NVRTC with them (f32 and bf16).
  std::shared_ptr<const expr::ScoreExprCall> expressions{};
};

// q [B, H, Tq, d_k], k [B, H, Tk, d_k], v [B, H, Tk, d_v] -> [B, H, Tq, d_v], differentiable
// w.r.t. q, k and v (and the options' bucket scores and values). A query row that sees no key
// gives zeros (and zero gradients).
// CPU: f32, f64, any head size. CUDA: f32 and bf16 (f32 accumulation), d_k and d_v in
// kCudaHeadDims; another size is an Error naming the supported ones and the `fallback` key. bf16
// with d_k and d_v in {64, 128} and Tq > 1 runs on tensor cores, where the weights (and dS)
// enter their products rounded to bf16 (docs/plugins.md).
Tensor flash_attention(const Tensor& q, const Tensor& k, const Tensor& v, const FlashOptions& options = {});

// The same forward, also returning the per-row logsumexp [B, H, Tq] (f64 for f64 inputs, else
// f32; -inf for a row that sees no key). For tests and for callers that need the statistics.
struct FlashForward {
  Tensor out;
  Tensor logsumexp;
};
FlashForward flash_attention_forward(const Tensor& q, const Tensor& k, const Tensor& v,
                                     const FlashOptions& options = {});

// The dtype the flash kernels compute in for inputs of `dtype` on `device` under `precision`:
// bf16 for f32 inputs on CUDA under Precision::bf16 (the bf16 kernels, with tensor cores at head
// sizes 64 and 128), `dtype` otherwise. The CPU path has no bf16 kernels and stays in f32 (f64
// inputs are never affected).
DType flash_compute_dtype(Device device, DType dtype, Precision precision);

// flash_attention in flash_compute_dtype(q's device, q's dtype, compute_precision()): under bf16
// precision on CUDA, q, k and v pass through the differentiable cast() to bf16 (their gradients
// come back in f32), the mask is converted to bf16 (0 and -inf are exact), and the bf16 output is
// cast back to q's dtype (the options' bucket scores and values are cast like q). Otherwise
// exactly flash_attention. The plugin calls this.
Tensor flash_attention_in_precision(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const FlashOptions& options = {});

// flash's FMA kernels (forward, dq, dk/dv) with a site's score expressions, for bf16 at head sizes
// of the tensor-core kernels (64, 128) theirs too, and for "sm_90a" with d_k = d_v the Hopper
// kernels' (in a build with CUTLASS), compiled by NVRTC for one GPU architecture ("sm_80",
// "sm_90a") into the kernel cache: the artifact, the kernels' lowered names (the tensor-core and
// Hopper ones empty where not compiled) and the CUBIN. For the CUDA path, `attnlab check` and
// the tests; a compile needs no GPU. Throws "built without CUDA" in a build without it, and NVRTC's
// messages when it fails.
struct ExpressionKernels {
  std::string path, forward, dq, dkdv, tc_forward, tc_dq, tc_dkdv, hopper_forward, hopper_dq, hopper_dkdv, cubin;
  bool compiled_now = false;
};
ExpressionKernels compile_expression_kernels(const expr::ScoreExpr& expr, DType element, std::int64_t dk,
                                             std::int64_t dv, const std::string& arch);

// Empty when the CUDA kernels serve (d_k, d_v); else the Error text for `plugin`.
std::string cuda_head_dims_problem(std::int64_t d_k, std::int64_t d_v);

}  // namespace attnlab::flash
