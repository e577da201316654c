#include <cmath>
#include <type_traits>

#include "cpu/parallel.h"
#include "ops/activation_kernels.h"
#include "ops/op_util.h"

namespace attnlab::detail {
namespace {

template <typename F>
void unary(const char* op, const Tensor& x, Tensor& y, F f) {
  dispatch_float(op, x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    T* py = y.data<T>();
    cpu::parallel_for(x.numel(), cpu::kElementwiseGrain, [&](std::int64_t s, std::int64_t e) {
      for (std::int64_t i = s; i < e; ++i) py[i] = f(px[i]);
    });
  });
}

// body(x, dy, dx, s, e) over the threads' ranges [s, e) of the elements, the tensors' data as T.
template <typename Body>
void backward_ranges(const char* op, const Tensor& x, const Tensor& dy, Tensor& dx, Body body) {
  dispatch_float(op, x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    const T* pg = dy.data<T>();
    T* pd = dx.data<T>();
    cpu::parallel_for(x.numel(), cpu::kElementwiseGrain, [&](std::int64_t s, std::int64_t e) { body(px, pg, pd, s, e); });
  });
}

template <typename F>
void unary_backward(const char* op, const Tensor& x, const Tensor& dy, Tensor& dx, F f) {
  backward_ranges(op, x, dy, dx, [&](const auto* px, const auto* pg, auto* pd, std::int64_t s, std::int64_t e) {
    for (std::int64_t i = s; i < e; ++i) pd[i] = pg[i] * f(px[i]);
  });
}

// dx = dy * [x > 0], a loop of its own: through unary_backward's f, GCC turns the select into a
// branch around the multiply (unpredictable on activations, and the loop no longer vectorizes).
void relu_backward(const char* op, const Tensor& x, const Tensor& dy, Tensor& dx) {
  backward_ranges(op, x, dy, dx, [](const auto* px, const auto* pg, auto* pd, std::int64_t s, std::int64_t e) {
    using T = std::remove_cvref_t<decltype(*px)>;
    for (std::int64_t i = s; i < e; ++i) {
      const T mask = px[i] > T(0) ? T(1) : T(0);
      pd[i] = pg[i] * mask;
    }
  });
}

constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

// 1 / (1 + e^-v), through e^-|v| so that the exponential never overflows.
template <typename T>
T sigmoid(T v) {
  if (v >= T(0)) return T(1) / (T(1) + std::exp(-v));
  const T e = std::exp(v);
  return e / (T(1) + e);
}

}  // namespace

void activation_forward_cpu(Activation kind, const Tensor& x, Tensor& y) {
  const char* op = kActivationNames[static_cast<std::size_t>(kind)].data();
  switch (kind) {
    case Activation::relu:
      unary(op, x, y, [](auto v) { return v > 0 ? v : decltype(v)(0); });
      return;
    case Activation::gelu:
      unary(op, x, y, [](auto v) {
        using T = decltype(v);
        return v * T(0.5) * (T(1) + std::erf(v * T(kInvSqrt2)));
      });
      return;
    case Activation::tanh:
      unary(op, x, y, [](auto v) { return std::tanh(v); });
      return;
    case Activation::silu:
      unary(op, x, y, [](auto v) { return v * sigmoid(v); });
      return;
  }
}

void activation_backward_cpu(Activation kind, const Tensor& x, const Tensor& dy, Tensor& dx) {
  const char* op = kActivationNames[static_cast<std::size_t>(kind)].data();
  switch (kind) {
    case Activation::relu:  // [x > 0]
      relu_backward(op, x, dy, dx);
      return;
    case Activation::gelu:  // Phi(x) + x phi(x)
      unary_backward(op, x, dy, dx, [](auto v) {
        using T = decltype(v);
        const T cdf = T(0.5) * (T(1) + std::erf(v * T(kInvSqrt2)));
        const T pdf = T(kInvSqrt2Pi) * std::exp(T(-0.5) * v * v);
        return cdf + v * pdf;
      });
      return;
    case Activation::tanh:  // 1 - tanh(x)^2
      unary_backward(op, x, dy, dx, [](auto v) {
        using T = decltype(v);
        const T t = std::tanh(v);
        return T(1) - t * t;
      });
      return;
    case Activation::silu:  // s (1 + x (1 - s)), s = sigmoid(x)
      unary_backward(op, x, dy, dx, [](auto v) {
        using T = decltype(v);
        const T s = sigmoid(v);
        return s * (T(1) + v * (T(1) - s));
      });
      return;
  }
}

}  // namespace attnlab::detail
