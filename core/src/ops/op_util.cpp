#include "ops/op_util.h"

namespace attnlab::detail {

void check_defined(std::string_view op, const Tensor& x, std::string_view what) {
  ATTNLAB_CHECK(x.defined(), "{}: {} is undefined", op, what);
}

void check_floating(std::string_view op, const Tensor& x) {
  ATTNLAB_CHECK(dtype_is_floating(x.dtype()), "{}: expected a floating tensor, got {}", op, x.str());
}

void check_index_dtype(std::string_view op, const Tensor& ids) {
  ATTNLAB_CHECK(ids.dtype() == DType::i32 || ids.dtype() == DType::i64,
                "{}: ids must be i32 or i64, got {}", op, ids.str());
}

void check_same_device(std::string_view op, const Tensor& a, const Tensor& b) {
  ATTNLAB_CHECK(a.device() == b.device(), "{}: tensors on different devices: {} and {}", op, a.str(),
                b.str());
}

void check_same_dtype(std::string_view op, const Tensor& a, const Tensor& b) {
  ATTNLAB_CHECK(a.dtype() == b.dtype(), "{}: dtypes differ: {} and {}", op, a.str(), b.str());
}

void check_same_shape(std::string_view op, const Tensor& a, const Tensor& b) {
  ATTNLAB_CHECK(a.shape() == b.shape(), "{}: shapes differ: {} and {}", op, a.shape().str(),
                b.shape().str());
}

void check_float_operands(std::string_view op, const Tensor& a, std::string_view a_name, const Tensor& b,
                          std::string_view b_name) {
  check_defined(op, a, a_name);
  check_defined(op, b, b_name);
  check_same_device(op, a, b);
  check_same_dtype(op, a, b);
  check_floating(op, a);
}

Tensor grad_or_zeros(const std::vector<Tensor>& grads, std::size_t i, const Shape& shape,
                     DType dtype, Device device) {
  if (i < grads.size() && grads[i].defined()) return grads[i];
  return Tensor::zeros(shape, dtype, device);
}

}  // namespace attnlab::detail
