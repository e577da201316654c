#pragma once
// Launchers of the flash kernels (flash_forward_cuda.cu, flash_backward_cuda.cu), with plain types
// only, so that flash_attention_host_cuda.cpp calls them without CUDA headers. Every launcher
// returns 0 on success or the CUDA error code (error_string names it); pointers are device
// pointers on `device`, tensors row-major and contiguous. Every kernel is queued on `stream` (the
// core's stream of the device, attnlab::cuda_stream), so that it is ordered with the core's work.
#include <cstdint>
#include <initializer_list>

struct CUstream_st;  // cudaStream_t without the CUDA headers

namespace attnlab::flash::cuda {

enum class Element : std::uint8_t { f32, bf16 };

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
  int device = 0;
  CUstream_st* stream = nullptr;
};

// Whether the tensor-core kernels (flash_tc_*.cuh) take a problem: bf16, d_k and d_v 64 or 128,
// more than one query (one decoding step stays on the FMA kernels, as does f32 and every other
// head size), and q, k, v and the `more` pointers (outputs, gradients) 16-byte aligned, as their
// vector loads need. forward() and backward() decide with it.
inline bool uses_tensor_cores(const Problem& p, std::initializer_list<const void*> more = {}) {
  auto served = [](std::int64_t d) { return d == 64 || d == 128; };
  auto aligned = [](const void* x) { return reinterpret_cast<std::uintptr_t>(x) % 16 == 0; };
  if (p.element != Element::bf16 || !served(p.dk) || !served(p.dv) || p.tq < 2) return false;
  for (const void* x : {p.q, p.k, p.v})
    if (!aligned(x)) return false;
  for (const void* x : more)
    if (!aligned(x)) return false;
  return true;
}

// out [B, H, Tq, dv] of `element`, lse [B, H, Tq] f32.
int forward(const Problem& p, void* out, float* lse);
// dq, dk, dv like q, k, v; delta [B, H, Tq] f32 scratch (rowsum(dout * out)).
int backward(const Problem& p, const void* out, const float* lse, const void* dout, float* delta, void* dq, void* dk,
             void* dv);
// lengths [B] i32 from the additive mask [B, Tk] (1 + the last key that is not -inf).
int key_lengths(Element element, const void* mask, std::int64_t batch, std::int64_t tk, std::int32_t* lengths,
                int device, CUstream_st* stream);
const char* error_string(int code);

}  // namespace attnlab::flash::cuda
