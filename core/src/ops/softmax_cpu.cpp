#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "cpu/exp_rows.h"
#include "cpu/parallel.h"
#include "ops/op_util.h"
#include "ops/softmax_kernels.h"

namespace attnlab::detail {
namespace {

// Where each row of x starts in a broadcast mask: per leading axis, the mask's stride, or 0 along
// an axis where the mask has extent 1.
struct MaskIndex {
  std::vector<std::int64_t> x_dims;   // x's leading extents (all but the last axis)
  std::vector<std::int64_t> strides;  // the mask's matching strides (0 where broadcast)
  std::int64_t key_step = 1;          // 1, or 0 when the mask's last extent is 1

  MaskIndex(const Shape& x, const Shape& m) {
    const int r = x.rank();
    std::vector<std::int64_t> ms(static_cast<std::size_t>(r));
    std::int64_t s = 1;
    for (int k = r - 1; k >= 0; --k) {
      ms[static_cast<std::size_t>(k)] = m[k] == 1 ? 0 : s;
      s *= m[k];
    }
    key_step = ms[static_cast<std::size_t>(r - 1)] == 0 ? 0 : 1;
    x_dims.assign(x.dims().begin(), x.dims().end() - 1);
    strides.assign(ms.begin(), ms.end() - 1);
  }

  std::int64_t row_offset(std::int64_t row) const {
    std::int64_t offset = 0;
    for (std::size_t k = x_dims.size(); k-- > 0;) {
      offset += (row % x_dims[k]) * strides[k];
      row /= x_dims[k];
    }
    return offset;
  }
};

template <typename T>
void forward_rows(const Tensor& x, const Tensor& mask, bool causal, bool log, Tensor& y) {
  const std::int64_t cols = x.dim(-1);
  if (cols == 0 || x.numel() == 0) return;
  const std::int64_t rows = x.numel() / cols;
  const std::int64_t tq = causal ? x.dim(-2) : 1;
  const T* px = x.data<T>();
  const T* pm = mask.defined() ? mask.data<T>() : nullptr;
  T* py = y.data<T>();
  const MaskIndex index = mask.defined() ? MaskIndex(x.shape(), mask.shape()) : MaskIndex(Shape{1}, Shape{1});
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();

  cpu::parallel_for(rows, cpu::row_grain(cols), [&](std::int64_t s, std::int64_t e) {
    for (std::int64_t r = s; r < e; ++r) {
      const T* xr = px + r * cols;
      T* yr = py + r * cols;
      const T* mr = pm ? pm + index.row_offset(r) : nullptr;
      const std::int64_t step = index.key_step;
      // Causal: query i sees keys j <= i + (Tk - Tq), i.e. the first `limit` keys.
      std::int64_t limit = cols;
      if (causal) limit = std::clamp<std::int64_t>(r % tq + (cols - tq) + 1, 0, cols);
      auto z = [&](std::int64_t j) { return mr ? xr[j] + mr[j * step] : xr[j]; };

      if constexpr (std::is_same_v<T, float>) {
        // f32 rows through the vectorized row loops (cpu/exp_rows.h): z written into y first.
        if (!mr) std::copy(xr, xr + limit, yr);
        else if (step == 0) std::transform(xr, xr + limit, yr, [m = mr[0]](T v) { return v + m; });
        else std::transform(xr, xr + limit, mr, yr, [](T v, T m) { return v + m; });
        const T max = cpu::max_row(yr, limit);
        if (!(max > kNegInf)) {  // every key masked
          std::fill(yr, yr + cols, log ? kNegInf : T(0));
          continue;
        }
        if (log) {
          const T log_sum = static_cast<T>(std::log(cpu::sum_exp(yr, max, limit)));
          for (std::int64_t j = 0; j < limit; ++j) yr[j] = (yr[j] - max) - log_sum;
        } else {
          cpu::exp_affine(yr, max, 1.0f, 0.0f, yr, limit);
          const T inv = static_cast<T>(1.0 / cpu::sum_row(yr, limit));
          for (std::int64_t j = 0; j < limit; ++j) yr[j] *= inv;
        }
        std::fill(yr + limit, yr + cols, log ? kNegInf : T(0));
        continue;
      }
      T max = kNegInf;
      for (std::int64_t j = 0; j < limit; ++j) max = std::max(max, z(j));
      if (!(max > kNegInf)) {  // every key masked
        std::fill(yr, yr + cols, log ? kNegInf : T(0));
        continue;
      }
      // Subtracting the row max keeps every exp() in (0, 1]: no overflow, and the largest term is 1.
      double sum = 0;
      if (log) {
        for (std::int64_t j = 0; j < limit; ++j) sum += std::exp(z(j) - max);
        const T log_sum = static_cast<T>(std::log(sum));
        for (std::int64_t j = 0; j < limit; ++j) yr[j] = (z(j) - max) - log_sum;
      } else {
        for (std::int64_t j = 0; j < limit; ++j) {
          const T v = std::exp(z(j) - max);
          yr[j] = v;
          sum += v;
        }
        const T inv = static_cast<T>(1.0 / sum);
        for (std::int64_t j = 0; j < limit; ++j) yr[j] *= inv;
      }
      std::fill(yr + limit, yr + cols, log ? kNegInf : T(0));
    }
  });
}

template <typename T>
void backward_rows(const Tensor& y, const Tensor& dy, bool log, Tensor& dx) {
  const std::int64_t cols = y.dim(-1);
  if (cols == 0 || y.numel() == 0) return;
  const std::int64_t rows = y.numel() / cols;
  const T* py = y.data<T>();
  const T* pg = dy.data<T>();
  T* pd = dx.data<T>();
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();

  cpu::parallel_for(rows, cpu::row_grain(cols), [&](std::int64_t s, std::int64_t e) {
    for (std::int64_t r = s; r < e; ++r) {
      const T* yr = py + r * cols;
      const T* gr = pg + r * cols;
      T* dr = pd + r * cols;
      double sum = 0;
      if (log) {
        for (std::int64_t j = 0; j < cols; ++j)
          if (yr[j] != kNegInf) sum += gr[j];
        const T s_t = static_cast<T>(sum);
        for (std::int64_t j = 0; j < cols; ++j)
          dr[j] = yr[j] == kNegInf ? T(0) : gr[j] - std::exp(yr[j]) * s_t;
      } else {
        for (std::int64_t j = 0; j < cols; ++j) sum += static_cast<double>(gr[j]) * yr[j];
        const T s_t = static_cast<T>(sum);
        for (std::int64_t j = 0; j < cols; ++j) dr[j] = yr[j] * (gr[j] - s_t);
      }
    }
  });
}

}  // namespace

void softmax_forward_cpu(const Tensor& x, const Tensor& mask, bool causal, bool log, Tensor& y) {
  dispatch_float(log ? "log_softmax" : "softmax", x.dtype(), [&](auto tag) {
    forward_rows<typename decltype(tag)::type>(x, mask, causal, log, y);
  });
}

void softmax_backward_cpu(const Tensor& y, const Tensor& dy, bool log, Tensor& dx) {
  dispatch_float(log ? "log_softmax" : "softmax", y.dtype(), [&](auto tag) {
    backward_rows<typename decltype(tag)::type>(y, dy, log, dx);
  });
}

}  // namespace attnlab::detail
