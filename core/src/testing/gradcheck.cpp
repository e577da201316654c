#include "attnlab/testing/gradcheck.h"

#include <cmath>
#include <algorithm>

#include <fmt/format.h>

#include "attnlab/autograd.h"
#include "attnlab/random.h"

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
                          GradcheckOptions options, const std::vector<Tensor>& params) {
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

  for (const Tensor& p : params) {
    ATTNLAB_CHECK(p.dtype() == DType::f64 && p.requires_grad() && p.is_leaf(),
                  "gradcheck: parameters must be f64 leaves that require grad, got {}", p.str());
    p.impl()->grad = Tensor();
  }

  // Analytic: one backward pass with seed w (uniform in [-1, 1) from the core's Philox stream).
  Tensor f = fn(xs);
  ATTNLAB_CHECK(f.requires_grad(), "gradcheck: the function's output does not depend on any input");
  std::vector<double> w_values(static_cast<std::size_t>(f.numel()));
  for (std::size_t i = 0; i < w_values.size(); ++i)
    w_values[i] = 2.0 * philox_uniform(options.seed, 0, i) - 1.0;
  f.backward(Tensor::from_vector<double>(f.shape(), w_values).to(f.dtype()).to(f.device()));
  std::vector<Tensor> leaves = xs;
  leaves.insert(leaves.end(), params.begin(), params.end());

  GradcheckResult result;
  double worst_failure = 0;
  NoGradGuard no_grad;
  for (std::size_t k = 0; k < leaves.size(); ++k) {
    Tensor& x = leaves[k];
    if (!x.defined() || !x.requires_grad() || !x.device().is_cpu()) continue;
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
      const double e = std::isnan(err) ? INFINITY : err;
      if (!(err <= bound) && (result.ok || e > worst_failure)) {
        worst_failure = e;
        result.ok = false;
        result.message = fmt::format(
            "gradient of {} {} ({}) element {}: analytic {} vs numeric {} (|diff| {})",
            k < xs.size() ? "input" : "parameter", k < xs.size() ? k : k - xs.size(),
            x.shape().str(), i, analytic[static_cast<std::size_t>(i)], numeric, err);
      }
      result.max_abs_error = std::max(result.max_abs_error, e);
    }
  }
  return result;
}

}  // namespace attnlab::testing
