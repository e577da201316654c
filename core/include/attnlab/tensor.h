#pragma once
// Tensor: a shape, an element type and a device over shared storage. Tensors are always
// contiguous and row-major; reshape() is a view (same storage), every other op makes a new tensor.
// Copies between devices and element types are explicit (to()).
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "attnlab/allocator.h"
#include "attnlab/dtype.h"
#include "attnlab/error.h"
#include "attnlab/shape.h"

namespace attnlab {

class Node;
struct TensorImpl;

class Tensor {
 public:
  Tensor() = default;  // undefined: holds nothing

  static Tensor empty(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu());
  static Tensor zeros(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu());
  static Tensor full(const Shape& shape, double value, DType dtype = DType::f32,
                     Device device = Device::cpu());
  // Copies host values into a new CPU tensor; values.size() must equal shape.numel().
  template <typename T>
  static Tensor from_vector(const Shape& shape, std::span<const T> values);
  template <typename T>
  static Tensor from_vector(const Shape& shape, const std::vector<T>& values) {
    return from_vector<T>(shape, std::span<const T>(values));
  }
  static Tensor empty_like(const Tensor& other);
  static Tensor zeros_like(const Tensor& other);

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const;
  int rank() const { return shape().rank(); }
  std::int64_t dim(int axis) const { return shape()[axis]; }
  std::int64_t numel() const { return shape().numel(); }
  DType dtype() const;
  Device device() const;
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype()); }
  std::string str() const;  // "f32[2, 3] on cpu"

  // Raw element pointer; checks that T matches the dtype.
  template <typename T>
  T* data() const;
  void* raw_data() const;

  // New tensor with the same values on `device` / converted to `dtype`. Returns *this when
  // nothing changes. Not differentiable across devices (use it outside the tape).
  Tensor to(Device device) const;
  Tensor to(DType dtype) const;
  Tensor clone() const;
  // Host copy of the values, converted to T.
  template <typename T>
  std::vector<T> to_vector() const;
  // The single value of a one-element tensor.
  double item() const;

  // A view with another shape and the same values (differentiable). One extent may be -1.
  Tensor reshape(const Shape& shape) const;

  // --- autograd ---
  bool requires_grad() const;
  // Marks a leaf tensor (a parameter) as wanting gradients; throws on a non-floating dtype.
  Tensor& set_requires_grad(bool value = true);
  bool is_leaf() const;
  // Accumulated gradient of a leaf, undefined before the first backward().
  Tensor grad() const;
  void zero_grad();
  void set_grad(const Tensor& grad);
  // Runs reverse-mode differentiation from this one-element tensor.
  void backward() const;
  // Runs reverse-mode differentiation with `grad` as the gradient of this tensor (same shape).
  void backward(const Tensor& grad) const;
  // Same storage, cut from the tape.
  Tensor detach() const;

  // Internal: the node that produced this tensor and which of its outputs it is.
  const std::shared_ptr<Node>& grad_fn() const;
  int output_nr() const;
  void set_history(std::shared_ptr<Node> node, int output_nr);
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool same_storage(const Tensor& other) const;

 private:
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<TensorImpl> impl_;
};

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  std::size_t offset_bytes = 0;
  Shape shape;
  DType dtype = DType::f32;

  bool requires_grad = false;
  std::shared_ptr<Node> grad_fn;  // null for leaves
  int output_nr = 0;
  Tensor grad;                         // leaves only
  std::weak_ptr<Node> grad_accumulator;  // leaves only, created on first use
};

template <typename T>
T* Tensor::data() const {
  ATTNLAB_CHECK(defined(), "data(): tensor is undefined");
  ATTNLAB_CHECK(dtype() == dtype_of_v<T>, "data<{}>() on a {} tensor", dtype_name(dtype_of_v<T>),
                str());
  return static_cast<T*>(raw_data());
}

}  // namespace attnlab
