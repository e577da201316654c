#pragma once
// The argument of the emulated flash kernels (FMA, or tensor-core) with score expressions
// (tests/plugins/test_flash_expressions_emulated.cpp): the test compiles the kernels, the structs
// generated for its expressions and the host emulation of CUDA into a shared object, and calls
// it with this struct. Both sides include this header.
#include "attnlab/expr/device_abi.h"

struct ExprEmulationArgs {
  int batch, heads, tq, tk;
  bool causal, bf16;
  float scale;
  // Element type float, or __nv_bfloat16 (16-bit bf16 storage) with bf16.
  // Head sizes kEmulatedDk and kEmulatedDv, or kTcHead (both) with tensor_cores.
  const void* q;     // [B, H, Tq, d_k]
  const void* k;     // [B, H, Tk, d_k]
  const void* v;     // [B, H, Tk, d_v]
  const void* dout;  // [B, H, Tq, d_v]
  const void* mask;  // [B, Tk] additive, or null
  const int* lengths;  // [B] key lengths, or null
  void* out;         // [B, H, Tq, d_v]
  float* lse;        // [B, H, Tq]
  float* delta;      // [B, H, Tq] scratch
  void* dq;          // like q
  void* dk;          // like k
  void* dv;          // like v
  attnlab::expr::DeviceArgs expr;
  // The order of a block's threads (cuda_host_threads.h's ThreadOrder: 0 thread order, 1 reverse,
  // 2 shuffled) and the shuffle's seed: the shared object has its own copy of the emulation.
  int order = 0;
  unsigned long long seed = 0;
  // The tensor-core kernels (bf16 only) instead of the FMA ones.
  bool tensor_cores = false;
};

// The head sizes of the emulated kernels: d_k 16, d_v 32 (FMA); 64 both (tensor cores).
inline constexpr int kEmulatedDk = 16, kEmulatedDv = 32, kTcHead = 64;
