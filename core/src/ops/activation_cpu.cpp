#include <cmath>

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

template <typename F>
void unary_backward(const char* op, const Tensor& x, const Tensor& dy, Tensor& dx, F f) {
  dispatch_float(op, x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    const T* pg = dy.data<T>();
    T* pd = dx.data<T>();
    cpu::parallel_for(x.numel(), cpu::kElementwiseGrain, [&](std::int64_t s, std::int64_t e) {
      for (std::int64_t i = s; i < e; ++i) pd[i] = pg[i] * f(px[i]);
    });
  });
}

constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

}  // namespace

void relu_forward_cpu(const Tensor& x, Tensor& y) {
  unary("relu", x, y, [](auto v) { return v > 0 ? v : decltype(v)(0); });
}

void relu_backward_cpu(const Tensor& x, const Tensor& dy, Tensor& dx) {
  unary_backward("relu", x, dy, dx, [](auto v) { return v > 0 ? decltype(v)(1) : decltype(v)(0); });
}

void gelu_forward_cpu(const Tensor& x, Tensor& y) {
  unary("gelu", x, y, [](auto v) {
    using T = decltype(v);
    return v * T(0.5) * (T(1) + std::erf(v * T(kInvSqrt2)));
  });
}

void gelu_backward_cpu(const Tensor& x, const Tensor& dy, Tensor& dx) {
  unary_backward("gelu", x, dy, dx, [](auto v) {
    using T = decltype(v);
    const T cdf = T(0.5) * (T(1) + std::erf(v * T(kInvSqrt2)));
    const T pdf = T(kInvSqrt2Pi) * std::exp(T(-0.5) * v * v);
    return cdf + v * pdf;
  });
}

}  // namespace attnlab::detail
