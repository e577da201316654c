#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "cpu/convert_bf16.h"
#include "cpu/parallel.h"
#include "ops/adam_kernels.h"
#include "ops/op_util.h"

namespace attnlab::detail {
namespace {

// adam_step_scalars (adam_scalars.h) in the element type.
template <typename T>
struct Coefficients {
  explicit Coefficients(const AdamHyper& h) {
    const AdamStepScalars s = adam_step_scalars(h);
    a = static_cast<T>(s.a);
    eps_hat = static_cast<T>(s.eps_hat);
    b1 = static_cast<T>(s.beta1);
    b2 = static_cast<T>(s.beta2);
    decay = static_cast<T>(s.decay);
    gs = static_cast<T>(s.grad_scale);
  }
  T a, eps_hat, b1, b2;
  T decay;  // 1 - lr * weight_decay: 1 exactly for Adam
  T gs;     // the gradient scale: 1 exactly without clipping
};

// Element i of one tensor; adam_step and adam_step_multi both run exactly this.
template <typename T>
inline void update(T* p, const T* g, T* m, T* v, std::int64_t i, const Coefficients<T>& c) {
  const T one = T(1);
  const T gi = c.gs * g[i];  // x * 1 == x: Adam without clipping is unchanged
  m[i] = c.b1 * m[i] + (one - c.b1) * gi;
  v[i] = c.b2 * v[i] + (one - c.b2) * gi * gi;
  p[i] = c.decay * p[i] - c.a * m[i] / (std::sqrt(v[i]) + c.eps_hat);
}

}  // namespace

void adam_update_cpu(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, const AdamHyper& h) {
  dispatch_float("adam_step", param.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = param.data<T>();
    const T* g = grad.data<T>();
    T* pm = m.data<T>();
    T* pv = v.data<T>();
    const Coefficients<T> c(h);
    cpu::parallel_for(param.numel(), cpu::kElementwiseGrain, [&](std::int64_t s, std::int64_t e) {
      for (std::int64_t i = s; i < e; ++i) update(p, g, pm, pv, i, c);
    });
  });
}

void adam_update_multi_cpu(std::span<const Tensor> params, std::span<const Tensor> grads, std::span<const Tensor> m,
                           std::span<const Tensor> v, const AdamHyper& h, std::span<const Tensor> bf16_copies) {
  if (params.empty()) return;
  dispatch_float("adam_step_multi", params[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const std::size_t n = params.size();
    std::vector<T*> pp(n), pm(n), pv(n);
    std::vector<const T*> pg(n);
    std::vector<std::uint16_t*> pc(n, nullptr);  // the bf16 copies (f32 params only)
    std::vector<std::int64_t> start(n + 1, 0);  // entry k holds the flat elements [start[k], start[k + 1])
    for (std::size_t k = 0; k < n; ++k) {
      pp[k] = params[k].data<T>();
      pg[k] = grads[k].data<T>();
      pm[k] = m[k].data<T>();
      pv[k] = v[k].data<T>();
      if (!bf16_copies.empty() && bf16_copies[k].defined()) pc[k] = &bf16_copies[k].data<bf16>()->bits;
      start[k + 1] = start[k] + params[k].numel();
    }
    const Coefficients<T> c(h);
    // One loop over the concatenation of all entries, so that small tensors share threads; a
    // chunk may start in one entry and end in another.
    cpu::parallel_for(start[n], cpu::kElementwiseGrain, [&](std::int64_t s, std::int64_t e) {
      auto k = static_cast<std::size_t>(std::upper_bound(start.begin(), start.end(), s) - start.begin() - 1);
      for (std::int64_t i = s; i < e;) {
        while (start[k + 1] <= i) ++k;  // skips empty entries
        const std::int64_t stop = std::min(e, start[k + 1]);
        const std::int64_t first = i - start[k], last = stop - start[k];
        for (std::int64_t j = first; j < last; ++j) update(pp[k], pg[k], pm[k], pv[k], j, c);
        if constexpr (std::is_same_v<T, float>)
          if (pc[k]) cpu::f32_to_bf16(pp[k] + first, pc[k] + first, last - first);
        i = stop;
      }
    });
  });
}

}  // namespace attnlab::detail
