#include "support/gradcheck.h"

#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "attnlab/autograd.h"
#include "support/tensor_testing.h"

namespace attnlab::testing {
namespace {

double weighted_sum(const Tensor& f, const std::vector<double>& w) {
  const auto values = f.to_vector<double>();
  double total = 0;
  for (std::size_t i = 0; i < values.size(); ++i) total += values[i] * w[i];
  return total;
}

}  // namespace

GradcheckResult gradcheck(const GradFn& fn, const std::vector<Tensor>& inputs,
                          GradcheckOptions options) {
  std::vector<Tensor> xs;
  for (const Tensor& in : inputs) {
    if (in.defined() && dtype_is_floating(in.dtype())) {
      Tensor x = in.to(DType::f64).clone();
      x.set_requires_grad(true);
      xs.push_back(x);
    } else {
      xs.push_back(in);
    }
  }

  // Analytic: one backward pass with seed w.
  Tensor f = fn(xs);
  Tensor w = random_tensor(f.shape(), options.seed, -1.0, 1.0, DType::f64);
  const auto w_values = w.to_vector<double>();
  f.backward(w);

  GradcheckResult result;
  NoGradGuard no_grad;
  for (std::size_t k = 0; k < xs.size(); ++k) {
    Tensor& x = xs[k];
    if (!x.defined() || !x.requires_grad()) continue;
    Tensor g = x.grad();
    const auto analytic = g.defined() ? g.to_vector<double>() : std::vector<double>(x.numel(), 0.0);
    double* p = x.data<double>();
    for (std::int64_t i = 0; i < x.numel(); ++i) {
      const double saved = p[i];
      p[i] = saved + options.eps;
      const double plus = weighted_sum(fn(xs), w_values);
      p[i] = saved - options.eps;
      const double minus = weighted_sum(fn(xs), w_values);
      p[i] = saved;
      const double numeric = (plus - minus) / (2 * options.eps);
      const double err = std::abs(numeric - analytic[static_cast<std::size_t>(i)]);
      const double bound = options.atol + options.rtol * std::abs(numeric);
      if (err > result.max_abs_error || std::isnan(err)) {
        result.max_abs_error = std::isnan(err) ? INFINITY : err;
        if (!(err <= bound)) {
          result.ok = false;
          result.message = fmt::format(
              "gradient of input {} ({}) element {}: analytic {} vs numeric {} (|diff| {})", k,
              x.shape().str(), i, analytic[static_cast<std::size_t>(i)], numeric, err);
        }
      }
    }
  }
  return result;
}

}  // namespace attnlab::testing
