#pragma once
// Backend kernels of binary.cpp. Tensors arrive checked: same dtype and device, out allocated.
#include <array>
#include <cstddef>
#include <string_view>

#include "attnlab/tensor.h"

namespace attnlab::detail {

enum class BinaryOp { add, sub, mul };
inline constexpr std::array<std::string_view, 3> kBinaryOpNames = {"add", "sub", "mul"};
static_assert(kBinaryOpNames.size() == static_cast<std::size_t>(BinaryOp::mul) + 1);

// out[i] = a[i % a.numel()] op b[i % b.numel()]; out.numel() is a multiple of both.
void binary_forward_cpu(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out);
// out = x * factor.
void scale_forward_cpu(const Tensor& x, double factor, Tensor& out);
// dst += src, same numel.
void add_inplace_cpu(Tensor& dst, const Tensor& src);
// in viewed as [rows, out.numel()]: out[j] = sum_r in[r, j]. Reduces a broadcast gradient.
void sum_rows_cpu(const Tensor& in, Tensor& out);

// The same on a CUDA device (binary_cuda.cu, through elementwise_cuda.cpp); f32, f64 and bf16.
void binary_forward_cuda(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out);
void scale_forward_cuda(const Tensor& x, double factor, Tensor& out);
void add_inplace_cuda(Tensor& dst, const Tensor& src);
void sum_rows_cuda(const Tensor& in, Tensor& out);

}  // namespace attnlab::detail
