#pragma once
// What the runners of the emulated flash kernels with score expressions share, inside the shared
// objects that tests/plugins/flash_expr_objects.cpp compiles: the order of a block's threads, the
// kernels' inputs from the test's arguments, and the backward's inputs with D = rowsum(dout * out)
// from the FMA path's delta kernel, which every family's backward starts from, as on the device.
// Include after the host emulation of CUDA, flash_backward_kernels.cuh and
// support/flash_expr_emulation.h.
#include <cstdint>

namespace flash_expr_runner {

namespace k = attnlab::flash::cuda::kernels;

// The order of a block's threads the test asked for, while the guard lives.
inline cuda_host_emulation::ThreadOrderGuard thread_order(const ExprEmulationArgs& a) {
  return cuda_host_emulation::ThreadOrderGuard(static_cast<cuda_host_emulation::ThreadOrder>(a.order), a.seed);
}

// The kernels' inputs (element type T) from the arguments.
template <typename T>
k::Inputs<T> inputs(const ExprEmulationArgs& a) {
  return {static_cast<const T*>(a.q), static_cast<const T*>(a.k), static_cast<const T*>(a.v),
          static_cast<const T*>(a.mask), a.lengths, a.heads, a.tq, a.tk, a.causal, a.scale, {}, {}, a.expr};
}

// The backward's inputs after the forward: D computed from its output (head size dv) into a.delta.
template <typename T>
k::BackwardInputs<T> backward_inputs(const ExprEmulationArgs& a, const k::Inputs<T>& in, int dv) {
  const std::int64_t rows = static_cast<std::int64_t>(a.batch) * a.heads * a.tq;
  const k::Grid gd = k::delta_grid(rows);
  cuda_host_emulation::launch(dim3(gd.x, gd.y), k::kThreads, [&] {
    k::delta_kernel<T>(static_cast<const T*>(a.out), static_cast<const T*>(a.dout), rows, dv, a.delta);
  });
  return {in, static_cast<const T*>(a.dout), a.lse, a.delta};
}

}  // namespace flash_expr_runner
