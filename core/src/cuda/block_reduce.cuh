#pragma once
// Block-wide reductions for kernels that give one block to one row. The order of the adds depends
// only on blockDim.x (a multiple of 32), so results are deterministic: no atomics.
#include <cstdint>

namespace attnlab::cuda {

inline constexpr int kRowThreads = 256;

struct SumOp {
  template <typename T>
  __device__ T operator()(T a, T b) const { return a + b; }
};
// fmax, not `a > b ? a : b`: the butterfly below gives every lane the same result only for a
// commutative op, and the ternary is not commutative once a NaN is involved (lane 0 could end
// with NaN, lane 1 with a number). Kernels branch on the reduced max (softmax's fully masked
// row returns early), so lanes that disagree would split around the next __syncthreads. fmax
// ignores NaN like the CPU's std::max(acc, x) loop; a NaN still reaches the output through the
// sum of exponentials, as on the CPU.
struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
  __device__ double operator()(double a, double b) const { return fmax(a, b); }
};

// Every thread passes its partial value and receives the reduction over the block. Safe to call
// several times in a row (it synchronizes before reusing its shared scratch).
template <typename T, typename Op>
__device__ T block_reduce(T v, Op op, T identity) {
  __shared__ T scratch[32];
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  const int warps = static_cast<int>(blockDim.x + 31) >> 5;
  v = lane < warps ? scratch[lane] : identity;
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ inline float device_exp(float v) { return expf(v); }
__device__ inline double device_exp(double v) { return exp(v); }

}  // namespace attnlab::cuda
