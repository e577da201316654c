#include "attnlab/tensor.h"

#include <cstring>

#include "attnlab/autograd.h"
#include "cuda/runtime.h"
#include "dispatch.h"
#include "tensor/transfer.h"

namespace attnlab {

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  for (auto d : shape.dims()) ATTNLAB_CHECK(d >= 0, "cannot create a tensor of shape {}", shape.str());
  auto impl = std::make_shared<TensorImpl>();
  try {
    impl->storage =
        std::make_shared<Storage>(device, static_cast<std::size_t>(shape.numel()) * dtype_size(dtype));
  } catch (const OutOfMemory& e) {  // the tensor it was for, then the allocator's account
    throw OutOfMemory(fmt::format("a {} {} tensor of shape {}: {}", device.str(), dtype_name(dtype), shape.str(), e.what()));
  }
  impl->shape = shape;
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

Tensor Tensor::full(const Shape& shape, double value, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  if (device.is_cpu())
    detail::fill_cpu(t.raw_data(), dtype, t.numel(), value);
  else
    ATTNLAB_CUDA_ONLY("fill", cuda::fill(t.raw_data(), dtype, t.numel(), value, device.index));
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) {
  return full(shape, 0.0, dtype, device);
}

Tensor Tensor::empty_like(const Tensor& other) {
  return empty(other.shape(), other.dtype(), other.device());
}
Tensor Tensor::zeros_like(const Tensor& other) {
  return zeros(other.shape(), other.dtype(), other.device());
}

template <typename T>
Tensor Tensor::from_vector(const Shape& shape, std::span<const T> values) {
  ATTNLAB_CHECK(static_cast<std::int64_t>(values.size()) == shape.numel(),
                "from_vector: {} values for shape {} ({} elements)", values.size(), shape.str(),
                shape.numel());
  Tensor t = empty(shape, dtype_of_v<T>, Device::cpu());
  if (!values.empty()) std::memcpy(t.raw_data(), values.data(), values.size_bytes());
  return t;
}
template Tensor Tensor::from_vector<float>(const Shape&, std::span<const float>);
template Tensor Tensor::from_vector<double>(const Shape&, std::span<const double>);
template Tensor Tensor::from_vector<bf16>(const Shape&, std::span<const bf16>);
template Tensor Tensor::from_vector<std::int32_t>(const Shape&, std::span<const std::int32_t>);
template Tensor Tensor::from_vector<std::int64_t>(const Shape&, std::span<const std::int64_t>);
template Tensor Tensor::from_vector<std::uint8_t>(const Shape&, std::span<const std::uint8_t>);

const Shape& Tensor::shape() const {
  ATTNLAB_CHECK(defined(), "shape() of an undefined tensor");
  return impl_->shape;
}
DType Tensor::dtype() const {
  ATTNLAB_CHECK(defined(), "dtype() of an undefined tensor");
  return impl_->dtype;
}
Device Tensor::device() const {
  ATTNLAB_CHECK(defined(), "device() of an undefined tensor");
  return impl_->storage->device();
}

std::string Tensor::str() const {
  if (!defined()) return "undefined tensor";
  return fmt::format("{}{} on {}", dtype_name(dtype()), shape().str(), device().str());
}

void* Tensor::raw_data() const {
  ATTNLAB_CHECK(defined(), "raw_data() of an undefined tensor");
  return static_cast<char*>(impl_->storage->data()) + impl_->offset_bytes;
}

bool Tensor::same_storage(const Tensor& other) const {
  return defined() && other.defined() && impl_->storage == other.impl_->storage;
}

Tensor Tensor::to(Device device) const {
  if (device == this->device()) return *this;
  Tensor out = empty(shape(), dtype(), device);
  ATTNLAB_CUDA_ONLY(fmt::format("copying {} to {}", str(), device.str()).c_str(),
                    cuda::copy_bytes(out.raw_data(), device, raw_data(), this->device(), nbytes()));
  return out;
}

Tensor Tensor::to(DType dtype) const {
  if (dtype == this->dtype()) return *this;
  Tensor out = empty(shape(), dtype, device());
  if (device().is_cpu())
    detail::convert_cpu(out.raw_data(), dtype, raw_data(), this->dtype(), numel());
  else
    ATTNLAB_CUDA_ONLY("to(dtype)",
                      cuda::convert(out.raw_data(), dtype, raw_data(), this->dtype(), numel(), device().index));
  return out;
}

Tensor Tensor::clone() const {
  Tensor out = empty(shape(), dtype(), device());
  if (device().is_cpu())
    std::memcpy(out.raw_data(), raw_data(), nbytes());
  else
    ATTNLAB_CUDA_ONLY("clone",
                      cuda::copy_bytes(out.raw_data(), device(), raw_data(), device(), nbytes()));
  return out;
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  Tensor host = to(Device::cpu()).to(dtype_of_v<T>);
  const T* p = host.data<T>();
  return std::vector<T>(p, p + host.numel());
}
template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<std::int32_t> Tensor::to_vector<std::int32_t>() const;
template std::vector<std::int64_t> Tensor::to_vector<std::int64_t>() const;
template std::vector<std::uint8_t> Tensor::to_vector<std::uint8_t>() const;

double Tensor::item() const {
  ATTNLAB_CHECK(numel() == 1, "item() needs a one-element tensor, got {}", str());
  return to_vector<double>()[0];
}

// --- autograd accessors ---

bool Tensor::requires_grad() const { return defined() && impl_->requires_grad; }

Tensor& Tensor::set_requires_grad(bool value) {
  ATTNLAB_CHECK(defined(), "set_requires_grad on an undefined tensor");
  ATTNLAB_CHECK(!value || dtype_is_floating(dtype()), "only floating tensors can require grad, got {}",
                str());
  ATTNLAB_CHECK(is_leaf(), "set_requires_grad on a non-leaf tensor {} (use detach())", str());
  impl_->requires_grad = value;
  return *this;
}

bool Tensor::is_leaf() const { return !defined() || impl_->grad_fn == nullptr; }
Tensor Tensor::grad() const { return defined() ? impl_->grad : Tensor(); }
void Tensor::zero_grad() {
  if (defined()) impl_->grad = Tensor();
}
void Tensor::set_grad(const Tensor& grad) {
  ATTNLAB_CHECK(defined(), "set_grad on an undefined tensor");
  if (grad.defined())
    ATTNLAB_CHECK(grad.shape() == shape(), "set_grad: gradient {} does not match tensor {}",
                  grad.str(), str());
  impl_->grad = grad;
}

void Tensor::backward() const { run_backward(*this); }
void Tensor::backward(const Tensor& grad) const { run_backward(*this, grad); }

Tensor Tensor::detach() const {
  if (!defined()) return {};
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = impl_->storage;
  impl->offset_bytes = impl_->offset_bytes;
  impl->shape = impl_->shape;
  impl->dtype = impl_->dtype;
  return Tensor(std::move(impl));
}

const std::shared_ptr<Node>& Tensor::grad_fn() const {
  static const std::shared_ptr<Node> none;
  return defined() ? impl_->grad_fn : none;
}
int Tensor::output_nr() const { return defined() ? impl_->output_nr : 0; }

void Tensor::set_history(std::shared_ptr<Node> node, int output_nr) {
  impl_->grad_fn = std::move(node);
  impl_->output_nr = output_nr;
  impl_->requires_grad = impl_->grad_fn != nullptr;
}

}  // namespace attnlab
