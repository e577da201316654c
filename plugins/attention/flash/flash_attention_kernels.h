#pragma once
// Backend kernels of flash_attention.cpp. q [B, H, Tq, d_k], k [B, H, Tk, d_k], v [B, H, Tk, d_v],
// out/dout [B, H, Tq, d_v] and dq/dk/dv like q/k/v share dtype and device; lse [B, H, Tq] is f64
// for f64 inputs and f32 otherwise. mask is the [B, Tk] additive mask or undefined; lengths the
// [B] i32 key lengths or undefined (every key is real). The options' scale, causal flag, dropout
// (p, seed, offset) and position terms are those of FlashOptions, checked; its mask and lengths
// fields are ignored here.
#include "flash_attention.h"
#include "flash_attention_cuda.h"

namespace attnlab::flash::detail {

// What the backward writes: the gradients of q, k and v (shaped like them), and of the options'
// bucket scores and values (shaped like them; undefined when the options have none).
struct FlashGrads {
  Tensor dq, dk, dv, d_bucket_scores, d_bucket_values;
  // Of each of the expressions' tensors: defined for those that require grad.
  std::vector<Tensor> d_expr_tensors;
};

// out = W (v + value terms), W = dropout(softmax(scale q k^T + score terms + mask)); lse = the
// per-row logsumexp of the scores (-inf for a row that sees no key, whose output is 0).
void flash_forward_cpu(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, const Tensor& lengths,
                       const FlashOptions& options, Tensor& out, Tensor& lse);
// dq, dk, dv from dout, recomputing the weights tile by tile from lse (FlashAttention-2):
// D = rowsum(dout * out), P = exp(s - lse), dP = (dout v^T) * keep / (1 - p), dS = P * (dP - D),
// dq = scale dS k, dk = scale dS^T q, dv = (P * keep / (1 - p))^T dout; the bucket scores get dS
// summed by bucket, the bucket values the dropped weights times dout. Every output is written.
void flash_backward_cpu(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                        const Tensor& dout, const Tensor& mask, const Tensor& lengths, const FlashOptions& options,
                        FlashGrads& grads);
// lengths[b] = 1 + the last j with mask[b, j] != -inf (0 when every key is -inf); lengths is i32 [B].
void flash_key_lengths_cpu(const Tensor& mask, Tensor& lengths);

// The same on a CUDA device (flash_attention_host_cuda.cpp, kernels in flash_*_cuda.cu): f32 and
// bf16 (lse f32), d_k and d_v in kCudaHeadDims, accumulation in f32; bf16 at head sizes 64 and 128
// on tensor cores or Hopper's warpgroup MMA where cuda::choose_kernel (flash_kernel_choice.h) picks
// them, bucketed position terms on the FMA or Hopper kernels.
void flash_forward_cuda(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, const Tensor& lengths,
                        const FlashOptions& options, Tensor& out, Tensor& lse);
void flash_backward_cuda(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                         const Tensor& dout, const Tensor& mask, const Tensor& lengths, const FlashOptions& options,
                         FlashGrads& grads);
void flash_key_lengths_cuda(const Tensor& mask, Tensor& lengths);
// The source NVRTC compiles for score expressions (`expressions`: cuda_expressions_source's struct
// named SiteExpressions), and the compile itself (flash_rtc_cuda.cpp).
std::string expression_kernels_source(const std::string& expressions, DType element, std::int64_t dk, std::int64_t dv,
                                      const std::string& arch);
ExpressionKernels compile_expression_kernels_cuda(const std::string& expressions, DType element, std::int64_t dk,
                                                  std::int64_t dv, const std::string& arch);
// The kernels of `e` for CUDA device `device` (its architecture), compiled (or found in the cache)
// and loaded once per process: the FMA family's, the tensor-core family's for bf16 at head sizes of
// MmaHeadSizes, and on sm_90 with ATTNLAB_FLASH_SM90=1 the Hopper family's for those with d_k = d_v.
struct LoadedExpressionKernels {
  cuda::CompiledKernels fma, tc, hopper;
};
LoadedExpressionKernels expression_kernels_on(const expr::ScoreExpr& e, DType element, std::int64_t dk,
                                              std::int64_t dv, int device);

// For `attnlab plugins`: which kernels serve which problems on CUDA device `device`
// (describe_cuda_kernels with the real blocks and the device's limits).
std::string flash_kernels_cuda(int device);

}  // namespace attnlab::flash::detail
