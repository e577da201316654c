#pragma once
// Backend kernels of dropout.cpp. x/dy and y/dx share shape, dtype and device; p is in (0, 1).
// Element i is kept when philox_uniform(seed, offset, i) >= p; a kept element is scaled by
// 1 / (1 - p), a dropped one is 0. The mask is a pure function of (seed, offset, i). A seed read
// from a slot is read once, when the kernel runs.
#include <cstdint>

#include "attnlab/philox.h"
#include "attnlab/tensor.h"

namespace attnlab::detail {

// y[i] = keep(i) ? x[i] / (1 - p) : 0
void dropout_forward_cpu(const Tensor& x, double p, philox::SeedRef seed, std::uint64_t offset, Tensor& y);
// dx[i] = keep(i) ? dy[i] / (1 - p) : 0 (the same mask, regenerated)
void dropout_backward_cpu(const Tensor& dy, double p, philox::SeedRef seed, std::uint64_t offset, Tensor& dx);

// The same on a CUDA device (dropout_cuda.cu): the mask is bit-identical to the CPU's.
void dropout_forward_cuda(const Tensor& x, double p, philox::SeedRef seed, std::uint64_t offset, Tensor& y);
void dropout_backward_cuda(const Tensor& dy, double p, philox::SeedRef seed, std::uint64_t offset, Tensor& dx);

}  // namespace attnlab::detail
