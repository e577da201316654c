#pragma once
// Central finite-difference gradient check in double precision, for ops and plugins.
//
// For f = fn(inputs) and a fixed random weight w of f's shape, the analytic gradient of
// L = <w, f> (one backward pass with seed w) is compared with (L(x + eps e_i) - L(x - eps e_i)) /
// (2 eps) for every element of every floating input and of every extra parameter. In f64 with
// eps = 1e-6 the truncation error is O(eps^2) and rounding O(1e-16 / eps), so a tolerance of
// 1e-6 catches any real error.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "attnlab/tensor.h"

namespace attnlab::testing {

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-6;
  double rtol = 1e-5;
  std::uint64_t seed = 1234;
};

struct GradcheckResult {
  bool ok = true;
  double max_abs_error = 0;
  std::string message;  // the worst element when !ok
};

using GradFn = std::function<Tensor(const std::vector<Tensor>&)>;

// Floating inputs are converted to f64 and differentiated; integer inputs (ids, targets) are
// passed through unchanged. `params` are f64 leaf tensors that fn uses directly (a module's
// parameters): they are perturbed in place and their gradients checked too.
GradcheckResult gradcheck(const GradFn& fn, const std::vector<Tensor>& inputs,
                          GradcheckOptions options = {}, const std::vector<Tensor>& params = {});

}  // namespace attnlab::testing
