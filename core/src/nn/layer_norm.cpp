#include "attnlab/nn/layer_norm.h"

#include "attnlab/ops/layer_norm.h"

namespace attnlab::nn {

LayerNorm::LayerNorm(std::int64_t features, double eps, DType dtype, Device device) : eps_(eps) {
  gamma_ = register_parameter("weight", Tensor::full({features}, 1.0, dtype, device));
  beta_ = register_parameter("bias", Tensor::zeros({features}, dtype, device));
}

Tensor LayerNorm::forward(const Tensor& x) const { return layer_norm(x, gamma_, beta_, eps_); }

}  // namespace attnlab::nn
