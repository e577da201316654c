#include "cpu/parallel.h"
#include "ops/binary_kernels.h"
#include "ops/op_util.h"

namespace attnlab::detail {
namespace {

template <typename T, typename F>
void broadcast_loop(const T* a, std::int64_t na, const T* b, std::int64_t nb, T* out, std::int64_t n,
                    F f) {
  if (na == n && nb == n) {
    cpu::parallel_for(n, cpu::kElementwiseGrain, [&](std::int64_t s, std::int64_t e) {
      for (std::int64_t i = s; i < e; ++i) out[i] = f(a[i], b[i]);
    });
    return;
  }
  // One side repeats with period p = its numel over rows of length p.
  const std::int64_t p = na == n ? nb : na;
  const std::int64_t rows = n / p;
  cpu::parallel_for(rows, cpu::row_grain(p), [&](std::int64_t s, std::int64_t e) {
    for (std::int64_t r = s; r < e; ++r) {
      T* o = out + r * p;
      if (na == n) {
        const T* ar = a + r * p;
        for (std::int64_t j = 0; j < p; ++j) o[j] = f(ar[j], b[j]);
      } else {
        const T* br = b + r * p;
        for (std::int64_t j = 0; j < p; ++j) o[j] = f(a[j], br[j]);
      }
    }
  });
}

}  // namespace

void binary_forward_cpu(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  dispatch_float(kBinaryOpNames[static_cast<std::size_t>(op)], out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* po = out.data<T>();
    switch (op) {
      case BinaryOp::add:
        return broadcast_loop(pa, a.numel(), pb, b.numel(), po, out.numel(), [](T x, T y) { return x + y; });
      case BinaryOp::sub:
        return broadcast_loop(pa, a.numel(), pb, b.numel(), po, out.numel(), [](T x, T y) { return x - y; });
      case BinaryOp::mul:
        return broadcast_loop(pa, a.numel(), pb, b.numel(), po, out.numel(), [](T x, T y) { return x * y; });
    }
  });
}

void scale_forward_cpu(const Tensor& x, double factor, Tensor& out) {
  dispatch_float("scale", x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    T* po = out.data<T>();
    const T f = static_cast<T>(factor);
    cpu::parallel_for(x.numel(), cpu::kElementwiseGrain, [&](std::int64_t s, std::int64_t e) {
      for (std::int64_t i = s; i < e; ++i) po[i] = px[i] * f;
    });
  });
}

void add_inplace_cpu(Tensor& dst, const Tensor& src) {
  dispatch_float("add_inplace", dst.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* pd = dst.data<T>();
    const T* ps = src.data<T>();
    cpu::parallel_for(dst.numel(), cpu::kElementwiseGrain, [&](std::int64_t s, std::int64_t e) {
      for (std::int64_t i = s; i < e; ++i) pd[i] += ps[i];
    });
  });
}

void sum_rows_cpu(const Tensor& in, Tensor& out) {
  dispatch_float("sum_rows", in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pi = in.data<T>();
    T* po = out.data<T>();
    const std::int64_t cols = out.numel();
    const std::int64_t rows = cols == 0 ? 0 : in.numel() / cols;
    // Split the columns across threads; each thread walks all rows, so sums stay in row order
    // and the result does not depend on the thread count.
    cpu::parallel_for(cols, cpu::row_grain(rows), [&](std::int64_t s, std::int64_t e) {
      for (std::int64_t j = s; j < e; ++j) po[j] = T(0);
      for (std::int64_t r = 0; r < rows; ++r) {
        const T* row = pi + r * cols;
        for (std::int64_t j = s; j < e; ++j) po[j] += row[j];
      }
    });
  });
}

}  // namespace attnlab::detail
