// adam_step: checks and dispatch (no autograd: the optimizer runs outside the tape).
#include "attnlab/ops/adam.h"

#include "dispatch.h"
#include "ops/adam_kernels.h"
#include "ops/op_util.h"

namespace attnlab {

void adam_step(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, const AdamHyper& hyper) {
  for (const Tensor* t : {&grad, static_cast<const Tensor*>(&m), static_cast<const Tensor*>(&v)}) {
    detail::check_same_device("adam_step", param, *t);
    detail::check_same_dtype("adam_step", param, *t);
    detail::check_same_shape("adam_step", param, *t);
  }
  detail::check_floating("adam_step", param);
  ATTNLAB_CHECK(hyper.step >= 1, "adam_step: step must be >= 1, got {}", hyper.step);
  ATTNLAB_CHECK(hyper.beta1 >= 0 && hyper.beta1 < 1 && hyper.beta2 >= 0 && hyper.beta2 < 1,
                "adam_step: betas must be in [0, 1), got {} and {}", hyper.beta1, hyper.beta2);
  ATTNLAB_DISPATCH(param.device(), detail::adam_update, param, grad, m, v, hyper);
}

}  // namespace attnlab
