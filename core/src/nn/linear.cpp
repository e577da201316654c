#include "attnlab/nn/linear.h"

#include "attnlab/init.h"
#include "attnlab/ops/matmul.h"

namespace attnlab::nn {

Linear::Linear(std::int64_t in, std::int64_t out, bool bias, Generator& init, DType dtype,
               Device device) {
  weight_ = register_parameter("weight", xavier_uniform(out, in, init, dtype, device));
  if (bias) bias_ = register_parameter("bias", Tensor::zeros({out}, dtype, device));
}

Tensor Linear::forward(const Tensor& x) const { return linear(x, weight_, bias_); }

}  // namespace attnlab::nn
