// CUDA device queries, allocation and copies.
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cuda/check.cuh"
#include "cuda/runtime.h"

namespace attnlab::cuda {
namespace {

class CudaAllocator final : public Allocator {
 public:
  explicit CudaAllocator(int index) : index_(index) {}
  void* allocate(std::size_t bytes) override {
    void* ptr = nullptr;
    ATTNLAB_CUDA_CHECK(cudaSetDevice(index_));
    ATTNLAB_CUDA_CHECK(cudaMalloc(&ptr, bytes == 0 ? 1 : bytes));
    in_use_ += bytes;
    return ptr;
  }
  void deallocate(void* ptr, std::size_t bytes) override {
    cudaSetDevice(index_);
    cudaFree(ptr);
    in_use_ -= bytes;
  }
  Device device() const override { return Device::cuda(index_); }
  std::size_t bytes_in_use() const override { return in_use_; }

 private:
  int index_;
  std::size_t in_use_ = 0;
};

// Element value converted to the dtype's bit pattern, for the fill kernel.
template <typename T>
__global__ void fill_kernel(T* dst, std::int64_t n, T value) {  // dst: (n)
  std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) dst[i] = value;
}

template <typename T>
void launch_fill(void* dst, std::int64_t n, T value) {
  if (n == 0) return;
  const int threads = 256;
  const auto blocks = static_cast<unsigned>((n + threads - 1) / threads);
  fill_kernel<T><<<blocks, threads>>>(static_cast<T*>(dst), n, value);
  ATTNLAB_CUDA_CHECK_LAUNCH();
}

}  // namespace

int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error
    return 0;
  }
  return count;
}

Allocator& allocator(int index) {
  static std::mutex mutex;
  static std::vector<std::unique_ptr<CudaAllocator>> allocators;
  std::lock_guard lock(mutex);
  const int count = device_count();
  if (index < 0 || index >= count)
    throw_message("cuda:" + std::to_string(index) + " requested but " + std::to_string(count) +
                  " CUDA device(s) are visible");
  if (allocators.empty()) allocators.resize(static_cast<std::size_t>(count));
  auto& slot = allocators[static_cast<std::size_t>(index)];
  if (!slot) slot = std::make_unique<CudaAllocator>(index);
  return *slot;
}

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device,
                std::size_t bytes) {
  if (bytes == 0) return;
  cudaMemcpyKind kind = cudaMemcpyDefault;
  if (dst_device.is_cuda() && src_device.is_cpu()) kind = cudaMemcpyHostToDevice;
  if (dst_device.is_cpu() && src_device.is_cuda()) kind = cudaMemcpyDeviceToHost;
  if (dst_device.is_cuda() && src_device.is_cuda()) kind = cudaMemcpyDeviceToDevice;
  // cudaMemcpy is ordered after the work of the legacy default stream of the *current* device
  // only. Make the source's device current (the destination's for an upload), so that a copy
  // of a tensor written by kernels on another device than the last one used waits for them.
  if (src_device.is_cuda() || dst_device.is_cuda())
    ATTNLAB_CUDA_CHECK(cudaSetDevice(src_device.is_cuda() ? src_device.index : dst_device.index));
  ATTNLAB_CUDA_CHECK(cudaMemcpy(dst, src, bytes, kind));
}

void fill(void* dst, DType dtype, std::int64_t n, double value, int device_index) {
  ATTNLAB_CUDA_CHECK(cudaSetDevice(device_index));
  switch (dtype) {
    case DType::f32: launch_fill<float>(dst, n, static_cast<float>(value)); break;
    case DType::f64: launch_fill<double>(dst, n, value); break;
    case DType::bf16: launch_fill<std::uint16_t>(dst, n, bf16(static_cast<float>(value)).bits); break;
    case DType::i32: launch_fill<std::int32_t>(dst, n, static_cast<std::int32_t>(value)); break;
    case DType::i64: launch_fill<std::int64_t>(dst, n, static_cast<std::int64_t>(value)); break;
    case DType::u8: launch_fill<std::uint8_t>(dst, n, static_cast<std::uint8_t>(value)); break;
  }
  ATTNLAB_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace attnlab::cuda
