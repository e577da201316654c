#include <vector>

#include "cpu/parallel.h"
#include "ops/layer_norm_kernels.h"
#include "ops/layer_norm_row.h"
#include "ops/op_util.h"

namespace attnlab::detail {
namespace {

template <typename T>
void forward_rows(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, Tensor& y,
                  Tensor& mean, Tensor& rstd, bool centered) {
  const std::int64_t d = x.dim(-1);
  if (d == 0 || x.numel() == 0) return;
  const std::int64_t rows = x.numel() / d;
  const T* px = x.data<T>();
  const T* pg = gamma.defined() ? gamma.data<T>() : nullptr;
  const T* pb = beta.defined() ? beta.data<T>() : nullptr;
  T* py = y.data<T>();
  T* pmean = mean.data<T>();
  T* prstd = rstd.data<T>();
  cpu::parallel_for(rows, cpu::row_grain(d), [&](std::int64_t s, std::int64_t e) {
    for (std::int64_t r = s; r < e; ++r)
      layer_norm_row_forward(px + r * d, pg, pb, d, eps, py + r * d, pmean[r], prstd[r], centered);
  });
}

template <typename T>
void backward_rows(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd,
                   const Tensor& dy, Tensor& dx, Tensor& dgamma, Tensor& dbeta, bool centered) {
  const std::int64_t d = x.dim(-1);
  const std::int64_t rows = d == 0 ? 0 : x.numel() / d;
  const T* px = x.data<T>();
  const T* pg = gamma.defined() ? gamma.data<T>() : nullptr;
  const T* pmean = mean.data<T>();
  const T* prstd = rstd.data<T>();
  const T* pdy = dy.data<T>();

  if (dx.defined() && rows > 0) {
    T* pdx = dx.data<T>();
    cpu::parallel_for(rows, cpu::row_grain(d), [&](std::int64_t s, std::int64_t e) {
      for (std::int64_t r = s; r < e; ++r)
        layer_norm_row_backward(px + r * d, pg, pmean[r], prstd[r], pdy + r * d, d, pdx + r * d, centered);
    });
  }

  if (dgamma.defined() || dbeta.defined()) {
    T* pdg = dgamma.defined() ? dgamma.data<T>() : nullptr;
    T* pdb = dbeta.defined() ? dbeta.data<T>() : nullptr;
    // Columns are split across threads; each sum is formed in row order whatever the thread count.
    cpu::parallel_for(d, cpu::row_grain(rows), [&](std::int64_t s, std::int64_t e) {
      layer_norm_param_grads(px, pdy, pmean, prstd, rows, d, s, e, pdg, pdb);
    });
  }
}

}  // namespace

void layer_norm_forward_cpu(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps,
                            Tensor& y, Tensor& mean, Tensor& rstd, bool centered) {
  dispatch_float("layer_norm", x.dtype(), [&](auto tag) {
    forward_rows<typename decltype(tag)::type>(x, gamma, beta, eps, y, mean, rstd, centered);
  });
}

void layer_norm_backward_cpu(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                             const Tensor& rstd, const Tensor& dy, Tensor& dx, Tensor& dgamma,
                             Tensor& dbeta, bool centered) {
  dispatch_float("layer_norm", x.dtype(), [&](auto tag) {
    backward_rows<typename decltype(tag)::type>(x, gamma, mean, rstd, dy, dx, dgamma, dbeta, centered);
  });
}

}  // namespace attnlab::detail
