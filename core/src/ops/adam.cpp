// adam_step and adam_step_multi: checks and dispatch (no autograd: the optimizer runs outside the tape).
#include "attnlab/ops/adam.h"

#include <cmath>
#include <set>
#include <string>
#include <utility>

#include "dispatch.h"
#include "ops/cast_node.h"
#include "ops/adam_kernels.h"
#include "ops/op_util.h"

namespace attnlab {
namespace {

void check_hyper(std::string_view op, const AdamHyper& hyper) {
  ATTNLAB_CHECK(hyper.step >= 1, "{}: step must be >= 1, got {}", op, hyper.step);
  ATTNLAB_CHECK(hyper.beta1 >= 0 && hyper.beta1 < 1 && hyper.beta2 >= 0 && hyper.beta2 < 1,
                "{}: betas must be in [0, 1), got {} and {}", op, hyper.beta1, hyper.beta2);
  ATTNLAB_CHECK(hyper.weight_decay >= 0 && hyper.lr * hyper.weight_decay < 1,
                "{}: weight_decay must be >= 0 with lr * weight_decay < 1, got {} at lr {}", op, hyper.weight_decay,
                hyper.lr);
  ATTNLAB_CHECK(hyper.grad_scale > 0 && std::isfinite(hyper.grad_scale),
                "{}: grad_scale must be finite and > 0, got {}", op, hyper.grad_scale);
}

// grad_scale_tensor, where set: a [] f64 tensor on the parameters' device; its value is checked
// where reading it costs no wait (the CPU).
void check_scale_tensor(std::string_view op, const AdamHyper& hyper, const Tensor& param) {
  const Tensor& s = hyper.grad_scale_tensor;
  if (!s.defined()) return;
  ATTNLAB_CHECK(s.rank() == 0 && s.dtype() == DType::f64 && s.device() == param.device(),
                "{}: grad_scale_tensor must be a [] f64 tensor on the parameters' device {}, got {}", op,
                param.device().str(), s.str());
  if (s.device().is_cuda()) return;
  const double value = *s.data<double>();
  ATTNLAB_CHECK(value > 0 && std::isfinite(value), "{}: grad_scale_tensor must hold a finite value > 0, got {}",
                op, value);
}

// grad, m and v of one entry against its param: device, dtype and shape.
void check_entry(std::string_view op, const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v) {
  for (const auto& [t, name] : {std::pair{&grad, "grad"}, {&m, "m"}, {&v, "v"}}) {
    detail::check_defined(op, *t, name);
    detail::check_same_device(op, param, *t);
    detail::check_same_dtype(op, param, *t);
    detail::check_same_shape(op, param, *t);
  }
}

}  // namespace

void adam_step(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, const AdamHyper& hyper) {
  detail::check_defined("adam_step", param, "param");
  check_entry("adam_step", param, grad, m, v);
  detail::check_floating("adam_step", param);
  check_hyper("adam_step", hyper);
  check_scale_tensor("adam_step", hyper, param);
  ATTNLAB_DISPATCH(param.device(), detail::adam_update, param, grad, m, v, hyper);
}

void adam_step_multi(std::span<const Tensor> params, std::span<const Tensor> grads, std::span<const Tensor> m,
                     std::span<const Tensor> v, const AdamHyper& hyper, std::span<const Tensor> bf16_copies) {
  ATTNLAB_CHECK(grads.size() == params.size() && m.size() == params.size() && v.size() == params.size(),
                "adam_step_multi: the lists must have one length, got {} params, {} grads, {} m and {} v",
                params.size(), grads.size(), m.size(), v.size());
  ATTNLAB_CHECK(bf16_copies.empty() || bf16_copies.size() == params.size(),
                "adam_step_multi: {} bf16 copies for {} params (none, or one per param)", bf16_copies.size(),
                params.size());
  check_hyper("adam_step_multi", hyper);
  if (params.empty()) return;
  const Tensor& first = params[0];
  std::set<const void*> storage;  // where each non-empty param's values start
  for (std::size_t i = 0; i < params.size(); ++i) {
    const std::string op = fmt::format("adam_step_multi (entry {})", i);
    detail::check_defined(op, params[i], "param");
    ATTNLAB_CHECK(params[i].device() == first.device() && params[i].dtype() == first.dtype(),
                  "{}: param {} differs from entry 0's {}: every tensor must be on one device and of one dtype", op,
                  params[i].str(), first.str());
    check_entry(op, params[i], grads[i], m[i], v[i]);
    ATTNLAB_CHECK(params[i].numel() == 0 || storage.insert(params[i].raw_data()).second,
                  "{}: param {} shares its storage with an earlier entry (each would be updated twice)", op,
                  params[i].str());
    if (!bf16_copies.empty() && bf16_copies[i].defined()) {
      const Tensor& c = bf16_copies[i];
      ATTNLAB_CHECK(detail::is_bf16_copy_of(c, params[i]),
                    "{}: the bf16 copy of param {} must be a bf16 tensor of its shape on its device (and the param "
                    "f32), got {}",
                    op, params[i].str(), c.str());
    }
  }
  detail::check_floating("adam_step_multi", first);
  check_scale_tensor("adam_step_multi", hyper, first);
  ATTNLAB_DISPATCH(first.device(), detail::adam_update_multi, params, grads, m, v, hyper, bf16_copies);
}

}  // namespace attnlab
