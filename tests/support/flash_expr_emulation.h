#pragma once
// The argument of the emulated flash FMA kernels with score expressions
// (tests/plugins/test_flash_expressions_emulated.cpp): the test compiles the kernels, the structs
// generated for its expressions and the host emulation of CUDA into a shared object, and calls
// it with this struct. Both sides include this header.
#include "attnlab/expr/device_abi.h"

struct ExprEmulationArgs {
  int batch, heads, tq, tk;
  bool causal, bf16;
  float scale;
  // Element type float, or __nv_bfloat16 (16-bit bf16 storage) with bf16.
  const void* q;     // [B, H, Tq, 16]
  const void* k;     // [B, H, Tk, 16]
  const void* v;     // [B, H, Tk, 32]
  const void* dout;  // [B, H, Tq, 32]
  const void* mask;  // [B, Tk] additive, or null
  const int* lengths;  // [B] key lengths, or null
  void* out;         // [B, H, Tq, 32]
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
};

// The head sizes of the emulated kernels: d_k 16, d_v 32.
inline constexpr int kEmulatedDk = 16, kEmulatedDv = 32;
