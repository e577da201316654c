#pragma once
// Backend kernels of activation.cpp. All tensors share shape, dtype and device.
#include <array>
#include <cstddef>
#include <string_view>

#include "attnlab/tensor.h"

namespace attnlab::detail {

enum class Activation { relu, gelu, tanh, silu };
inline constexpr std::array<std::string_view, 4> kActivationNames = {"relu", "gelu", "tanh", "silu"};
static_assert(kActivationNames.size() == static_cast<std::size_t>(Activation::silu) + 1);

// y = f(x), elementwise:
//   relu: max(0, x)
//   gelu: x * Phi(x)
//   tanh: tanh(x)
//   silu: x * sigmoid(x), sigmoid evaluated without overflow for large |x|
void activation_forward_cpu(Activation kind, const Tensor& x, Tensor& y);
// dx = dy * f'(x), from the saved input x:
//   relu: f' = [x > 0]
//   gelu: f' = Phi(x) + x * phi(x)
//   tanh: f' = 1 - tanh(x)^2
//   silu: f' = s + x * s * (1 - s) = s * (1 + x * (1 - s)), s = sigmoid(x)
void activation_backward_cpu(Activation kind, const Tensor& x, const Tensor& dy, Tensor& dx);

// The same on a CUDA device (activation_cuda.cu); f32, f64 and bf16 (computed in f32).
void activation_forward_cuda(Activation kind, const Tensor& x, Tensor& y);
void activation_backward_cuda(Activation kind, const Tensor& x, const Tensor& dy, Tensor& dx);

}  // namespace attnlab::detail
