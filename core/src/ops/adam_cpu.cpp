#include <cmath>

#include "cpu/parallel.h"
#include "ops/adam_kernels.h"
#include "ops/op_util.h"

namespace attnlab::detail {

void adam_update_cpu(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, const AdamHyper& h) {
  dispatch_float("adam_step", param.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = param.data<T>();
    const T* g = grad.data<T>();
    T* pm = m.data<T>();
    T* pv = v.data<T>();
    const double t = static_cast<double>(h.step);
    // Folding the bias corrections into the step size and epsilon keeps one division per element:
    // lr * m_hat / (sqrt(v_hat) + eps) = a * m / (sqrt(v) + eps_hat),
    // a = lr sqrt(1 - b2^t) / (1 - b1^t), eps_hat = eps sqrt(1 - b2^t).
    const double c2 = std::sqrt(1.0 - std::pow(h.beta2, t));
    const T a = static_cast<T>(h.lr * c2 / (1.0 - std::pow(h.beta1, t)));
    const T eps_hat = static_cast<T>(h.eps * c2);
    const T b1 = static_cast<T>(h.beta1), b2 = static_cast<T>(h.beta2);
    const T one = T(1);
    cpu::parallel_for(param.numel(), cpu::kElementwiseGrain, [&](std::int64_t s, std::int64_t e) {
      for (std::int64_t i = s; i < e; ++i) {
        pm[i] = b1 * pm[i] + (one - b1) * g[i];
        pv[i] = b2 * pv[i] + (one - b2) * g[i] * g[i];
        p[i] -= a * pm[i] / (std::sqrt(pv[i]) + eps_hat);
      }
    });
  });
}

}  // namespace attnlab::detail
