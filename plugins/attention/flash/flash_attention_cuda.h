#pragma once
// Launchers of the flash kernels (flash_forward_cuda.cu, flash_backward_cuda.cu), with plain types
// only, so that flash_attention_host_cuda.cpp calls them without CUDA headers. Every launcher
// returns 0 on success or the CUDA error code (error_string names it); pointers are device
// pointers on `device`, tensors row-major and contiguous.
#include <cstdint>

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
};

// out [B, H, Tq, dv] of `element`, lse [B, H, Tq] f32.
int forward(const Problem& p, void* out, float* lse);
// dq, dk, dv like q, k, v; delta [B, H, Tq] f32 scratch (rowsum(dout * out)).
int backward(const Problem& p, const void* out, const float* lse, const void* dout, float* delta, void* dq, void* dk,
             void* dv);
// lengths [B] i32 from the additive mask [B, Tk] (1 + the last key that is not -inf).
int key_lengths(Element element, const void* mask, std::int64_t batch, std::int64_t tk, std::int32_t* lengths,
                int device);
const char* error_string(int code);

}  // namespace attnlab::flash::cuda
