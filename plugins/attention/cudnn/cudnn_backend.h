#pragma once
// The cudnn plugin's one door to cuDNN. cudnn_backend.cpp is the only file that includes cuDNN:
// it turns the graphs of sdpa_graph.h into backend descriptors, finds an engine through cuDNN's
// heuristics, caches the execution plan per problem and runs it. This header has no CUDA or cuDNN
// types.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "sdpa_graph.h"

namespace attnlab::cudnn_attention {

// Device pointers of one forward call, laid out as the problem's graph says (sdpa_graph.h).
struct ForwardBuffers {
  const void* q = nullptr;           // bf16 [b, h, s_q, d_qk] (q_layout)
  const void* k = nullptr;           // bf16 [b, h, s_kv, d_qk] (kv_layout)
  const void* v = nullptr;           // bf16 [b, h, s_kv, d_v] (kv_layout)
  void* o = nullptr;                 // bf16 [b, h, s_q, d_v] (q_layout)
  void* stats = nullptr;             // f32 [b, h, s_q, 1]; training only
  const void* seq_len_q = nullptr;   // i32 [b]; padding only
  const void* seq_len_kv = nullptr;  // i32 [b]; padding only
  float scale = 1.0f;                // applied to q k^T
};

struct BackwardBuffers {
  const void *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr;  // as in the forward
  const void* d_o = nullptr;    // bf16, layout of o
  const void* stats = nullptr;  // f32 [b, h, s_q, 1] from the forward
  void *d_q = nullptr, *d_k = nullptr, *d_v = nullptr;  // bf16, layouts of q, k, v; fully written
  const void* seq_len_q = nullptr;
  const void* seq_len_kv = nullptr;
  float scale = 1.0f;
};

// One cuDNN handle on one CUDA device and the execution plans built on it, one per problem and
// direction. Every cudnn attention module on a device shares it (for_device keeps only a weak
// reference, so the handle goes when the last module and autograd node using it go). Work runs on
// the core's stream of the device (attnlab::cuda_stream), ordered with the core's kernels and
// copies. Thread-safe.
class CudnnSdpa {
 public:
  // Throws an Error when the device is not visible or the cuDNN at run time is older than 9.0.
  static std::shared_ptr<CudnnSdpa> for_device(int device_index);
  ~CudnnSdpa();
  CudnnSdpa(const CudnnSdpa&) = delete;
  CudnnSdpa& operator=(const CudnnSdpa&) = delete;

  // Throw an Error naming the cuDNN call, the file:line and the problem when cuDNN refuses.
  void forward(const SdpaProblem& p, const ForwardBuffers& buffers);
  void backward(const SdpaProblem& p, const BackwardBuffers& buffers);

  // The per-batch lengths of the graphs from an additive key padding mask, on the device and on
  // the session's stream (key_lengths_cuda.cu): seq_len_kv[b] = 1 + the last key of row b that
  // is not -inf (at least 1), seq_len_q[b] = s_q. mask: f32 [batch, keys]; seq_len_q, seq_len_kv:
  // i32 [batch]; all on the session's device. Nothing is read back: a row that breaks cuDNN's
  // rule (mask_rule.h) is recorded in the session's host-mapped problem word for
  // take_mask_problem(). Throws an Error when the launch fails.
  void key_lengths(const float* mask, std::int64_t batch, std::int64_t keys, std::int32_t s_q, std::int32_t* seq_len_q,
                   std::int32_t* seq_len_kv);
  // The problem code a finished key_lengths kernel recorded (kNoMaskProblem when none), cleared
  // as it is taken. Never waits: a kernel still queued is seen by a later call.
  std::uint64_t take_mask_problem();

  // The cuDNN library loaded at run time, e.g. 91900 for 9.19.0.
  static std::size_t runtime_version();

 private:
  struct Impl;
  explicit CudnnSdpa(int device_index);
  std::unique_ptr<Impl> impl_;
};

}  // namespace attnlab::cudnn_attention
