#include <bit>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "cpu/parallel.h"
#include "cpu/philox_mask.h"
#include "ops/dropout_add_layer_norm_kernels.h"
#include "ops/layer_norm_row.h"
#include "ops/op_util.h"

namespace attnlab::detail {
namespace {

template <typename T>
const T* ptr_or_null(const Tensor& t) { return t.defined() ? t.data<T>() : nullptr; }

// keep[k] = [philox_uniform(seed, offset, begin + k) >= p] for k < n (cpu/philox_mask.h: the
// blocks of philox.h, many at a time).
void draw_keep(const DropoutMask& mask, std::int64_t begin, std::int64_t n, std::uint8_t* keep) {
  cpu::philox_keep(mask.seed.get(), mask.offset, mask.p, static_cast<std::uint64_t>(begin), n, keep);
}

// keep ? v : +0, by masking the bits of v: a written select (keep ? v * scale : 0) lets GCC move
// the multiply into a branch, and the loop no longer vectorizes. Exactly the select's value.
template <typename T>
T kept_or_zero(T v, std::uint8_t keep) {
  using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  return std::bit_cast<T>(std::bit_cast<Bits>(v) & (Bits{0} - Bits{keep}));
}

// Rows are independent: each is drawn, summed and normalized by one thread, so the result does
// not depend on the thread count. The arithmetic is that of add, dropout and layer_norm.
template <typename T>
void forward_rows(const DropoutAddLayerNormInputs& in, const DropoutMask& mask, double eps, Tensor& sum,
                  Tensor& y, Tensor& mean, Tensor& rstd) {
  const std::int64_t d = in.x.dim(-1);
  if (d == 0 || in.x.numel() == 0) return;
  const std::int64_t rows = in.x.numel() / d;
  const T* px = in.x.data<T>();
  const T* pbias = ptr_or_null<T>(in.bias);
  const T* pr = in.residual.data<T>();
  const T* pg = ptr_or_null<T>(in.gamma);
  const T* pb = ptr_or_null<T>(in.beta);
  T* ps = sum.data<T>();
  T* py = y.data<T>();
  T* pmean = mean.data<T>();
  T* prstd = rstd.data<T>();
  const bool drop = mask.p > 0.0;
  const T scale = static_cast<T>(1.0 / (1.0 - mask.p));  // as dropout_cpu.cpp
  const T alpha = static_cast<T>(in.residual_scale);     // as scale(): one rounding, exact for 1
  cpu::parallel_for(rows, cpu::row_grain(d), [&](std::int64_t s, std::int64_t e) {
    // All kept without dropout (scale is then 1): one branch-free loop below, which vectorizes.
    std::vector<std::uint8_t> keep(static_cast<std::size_t>(d), 1);
    for (std::int64_t r = s; r < e; ++r) {
      const std::int64_t base = r * d;
      if (drop) draw_keep(mask, base, d, keep.data());
      T* sr = ps + base;
      // With and without bias as two loops, so that neither tests pbias per element.
      const auto sum_row = [&](auto has_bias) {
        for (std::int64_t j = 0; j < d; ++j) {
          const T v = has_bias ? px[base + j] + pbias[j] : px[base + j];
          sr[j] = pr[base + j] * alpha + kept_or_zero(v * scale, keep[static_cast<std::size_t>(j)]);
        }
      };
      if (pbias)
        sum_row(std::true_type{});
      else
        sum_row(std::false_type{});
      // In place when sum is y: the row function reads sr[j] before it writes py[base + j].
      layer_norm_row_forward(sr, pg, pb, d, eps, py + base, pmean[r], prstd[r], in.centered);
    }
  });
}

template <typename T>
void backward_rows(const Tensor& sum, const Tensor& gamma, const Tensor& mean, const Tensor& rstd,
                   const Tensor& dy, const DropoutMask& mask, bool centered, DropoutAddLayerNormGrads& grads) {
  const std::int64_t d = sum.dim(-1);
  const std::int64_t rows = d == 0 ? 0 : sum.numel() / d;
  const T* ps = sum.data<T>();
  const T* pg = ptr_or_null<T>(gamma);
  const T* pmean = mean.data<T>();
  const T* prstd = rstd.data<T>();
  const T* pdy = dy.data<T>();
  T* pdx = grads.dx.defined() ? grads.dx.data<T>() : nullptr;
  const T* pextra = grads.ds_extra.defined() ? grads.ds_extra.data<T>() : nullptr;
  const bool drop = mask.p > 0.0;
  const T scale = static_cast<T>(1.0 / (1.0 - mask.p));

  if (grads.ds.defined() && rows > 0) {
    T* pds = grads.ds.data<T>();
    cpu::parallel_for(rows, cpu::row_grain(d), [&](std::int64_t s, std::int64_t e) {
      // All kept without dropout, as in the forward.
      std::vector<std::uint8_t> keep(static_cast<std::size_t>(pdx ? d : 0), 1);
      for (std::int64_t r = s; r < e; ++r) {
        const std::int64_t base = r * d;
        layer_norm_row_backward(ps + base, pg, pmean[r], prstd[r], pdy + base, d, pds + base, centered);
        if (pextra)
          for (std::int64_t j = 0; j < d; ++j) pds[base + j] = pextra[base + j] + pds[base + j];
        if (!pdx) continue;
        if (drop) draw_keep(mask, base, d, keep.data());
        for (std::int64_t j = 0; j < d; ++j)
          pdx[base + j] = kept_or_zero(pds[base + j] * scale, keep[static_cast<std::size_t>(j)]);
      }
    });
  }

  T* pdg = grads.dgamma.defined() ? grads.dgamma.data<T>() : nullptr;
  T* pdb = grads.dbeta.defined() ? grads.dbeta.data<T>() : nullptr;
  T* pdbias = grads.dbias.defined() ? grads.dbias.data<T>() : nullptr;
  if (!pdg && !pdb && !pdbias) return;
  // Columns are split across threads; each sum is formed in row order whatever the thread count.
  cpu::parallel_for(d, cpu::row_grain(rows), [&](std::int64_t s, std::int64_t e) {
    layer_norm_param_grads(ps, pdy, pmean, prstd, rows, d, s, e, pdg, pdb, pdx, pdbias);
  });
}

}  // namespace

void dropout_add_layer_norm_forward_cpu(const DropoutAddLayerNormInputs& in, const DropoutMask& mask,
                                        double eps, Tensor& sum, Tensor& y, Tensor& mean, Tensor& rstd) {
  dispatch_float("dropout_add_layer_norm", in.x.dtype(), [&](auto tag) {
    forward_rows<typename decltype(tag)::type>(in, mask, eps, sum, y, mean, rstd);
  });
}

void dropout_add_layer_norm_backward_cpu(const Tensor& sum, const Tensor& gamma, const Tensor& mean,
                                         const Tensor& rstd, const Tensor& dy, const DropoutMask& mask,
                                         bool centered, DropoutAddLayerNormGrads& grads) {
  dispatch_float("dropout_add_layer_norm", sum.dtype(), [&](auto tag) {
    backward_rows<typename decltype(tag)::type>(sum, gamma, mean, rstd, dy, mask, centered, grads);
  });
}

}  // namespace attnlab::detail
