#pragma once
// The emulated flash kernels with the code generated for score expressions, built into shared
// objects for test_flash_expressions_emulated.cpp: the system's C++ compiler compiles flash's
// kernels, the structs generated for seven variants and the host emulation of CUDA into one object
// for the FMA and tensor-core kernels (support/cuda_host_emulation.h, WMMA included) and, in a
// build with CUTLASS, one for the Hopper kernels (support/cuda_sm90_host_emulation.h, with CuTe's
// and the CUDA toolkit's host headers). Each is compiled once into the kernel cache, keyed by its
// source and a hash of the headers it may include, and loaded once per process. Every entry point
// takes an ExprEmulationArgs (support/flash_expr_emulation.h).
#include <memory>
#include <vector>

#include "attnlab/expr/score_expr.h"
#include "attnlab/testing/expression_variants.h"

namespace flash_expr_objects {

// The variants, for two heads: causal, ALiBi, a T5 bias (learned), a window with a sink, soft-capping,
// a learned temperature, and one that reads the sequence lengths.
std::vector<attnlab::testing::ExpressionVariant> variants();
// A variant's expressions, positions proven within 512.
std::shared_ptr<const attnlab::expr::ScoreExpr> build(const attnlab::testing::ExpressionVariant& v);

// Variant v on the FMA kernels in f32 at 3 v, in bf16 at 3 v + 1, on the tensor-core kernels
// (bf16, head size kTcHead) at 3 v + 2: forward, delta, dq, dk/dv.
const std::vector<void*>& entries();
// Whether this build has the Hopper kernels; variant v on them at v (bf16, head size kTcHead; their
// kExtras variant, as NVRTC compiles them; D from the FMA path's delta kernel). Throws where the
// build has none.
bool hopper_built();
const std::vector<void*>& hopper_entries();

}  // namespace flash_expr_objects
