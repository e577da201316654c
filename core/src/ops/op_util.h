#pragma once
// Checks and dtype dispatch shared by the op implementations.
#include <cstdint>
#include <string_view>

#include "attnlab/tensor.h"

namespace attnlab::detail {

void check_defined(std::string_view op, const Tensor& x, std::string_view what);
void check_floating(std::string_view op, const Tensor& x);
void check_index_dtype(std::string_view op, const Tensor& ids);
// Same device and dtype, with an Error naming both tensors otherwise.
void check_same_device(std::string_view op, const Tensor& a, const Tensor& b);
void check_same_dtype(std::string_view op, const Tensor& a, const Tensor& b);
void check_same_shape(std::string_view op, const Tensor& a, const Tensor& b);
// The operands of a two-input floating op: both defined, on one device, of one floating dtype.
void check_float_operands(std::string_view op, const Tensor& a, std::string_view a_name, const Tensor& b,
                          std::string_view b_name);

template <typename T>
struct TypeTag {
  using type = T;
};

// Calls fn(TypeTag<T>{}) with T the C++ type of a floating dtype that the CPU kernels compute in
// (f32, f64); any other dtype throws an Error naming the op.
template <typename Fn>
decltype(auto) dispatch_float(std::string_view op, DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::f32: return fn(TypeTag<float>{});
    case DType::f64: return fn(TypeTag<double>{});
    default: break;
  }
  throw Error(fmt::format("{}: dtype {} is not supported on cpu (f32, f64)", op, dtype_name(dtype)));
}

// For kernels that also read bf16 and compute it in f32: fn(TypeTag<X>{}, TypeTag<T>{}) with X the
// element type (float, double or bf16) and T the type computed in (float for bf16, else X).
template <typename Fn>
decltype(auto) dispatch_float_or_bf16(std::string_view op, DType dtype, Fn&& fn) {
  if (dtype == DType::bf16) return fn(TypeTag<bf16>{}, TypeTag<float>{});
  return dispatch_float(op, dtype, [&](auto tag) { return fn(tag, tag); });
}

// The same for index tensors (i32, i64).
template <typename Fn>
decltype(auto) dispatch_index(std::string_view op, DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::i32: return fn(TypeTag<std::int32_t>{});
    case DType::i64: return fn(TypeTag<std::int64_t>{});
    default: break;
  }
  throw Error(fmt::format("{}: ids must be i32 or i64, got {}", op, dtype_name(dtype)));
}

// For ops over values and ids (cross_entropy): fn.template operator()<X, T, I>() (a lambda
// []<typename X, typename T, typename I>() {...}) with X and T as dispatch_float_or_bf16 gives them
// for `dtype`, I as dispatch_index for `ids`.
template <typename Fn>
decltype(auto) dispatch_float_and_index(std::string_view op, DType dtype, DType ids, Fn&& fn) {
  return dispatch_float_or_bf16(op, dtype, [&](auto xtag, auto ftag) {
    return dispatch_index(op, ids, [&](auto itag) {
      return fn.template operator()<typename decltype(xtag)::type, typename decltype(ftag)::type,
                                    typename decltype(itag)::type>();
    });
  });
}

// The gradient of a broadcast input: the output gradient summed over the leading axes along
// which the input was repeated, in the input's shape (binary.cpp).
Tensor sum_to_shape(const Tensor& grad, const Shape& shape);

// The gradient of an output, or zeros of its shape when the output received none.
Tensor grad_or_zeros(const std::vector<Tensor>& grads, std::size_t i, const Shape& shape,
                     DType dtype, Device device);

}  // namespace attnlab::detail
