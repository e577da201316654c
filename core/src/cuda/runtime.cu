// CUDA device queries, the caching device allocator (and the scratch buffers of scratch.h over
// it), copies and fills. Everything is queued on the device's context stream (cuda/context.h).
#include <array>
#include <cstdio>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "cuda/check.cuh"
#include "cuda/context.h"
#include "cuda/runtime.h"
#include "cuda/scratch.h"
#include "memory/caching_allocator.h"
#include "memory/memory_limit.h"

namespace attnlab::cuda {
namespace {

constexpr int kMaxAllocators = 64;

// The allocator of one device: a CachingAllocator over cudaMalloc / cudaFree. Reusing a cached
// block without synchronising is safe because all of the device's work is on its one context
// stream (see caching_allocator.h).
class CudaAllocator final : public Allocator {
 public:
  explicit CudaAllocator(int index)
      : index_(index),
        cache_(CachingAllocator::Backend{[index](std::size_t bytes) -> void* {
                                           ATTNLAB_CUDA_CHECK(cudaSetDevice(index));
                                           void* ptr = nullptr;
                                           const cudaError_t status = cudaMalloc(&ptr, bytes);
                                           if (status == cudaErrorMemoryAllocation) {
                                             cudaGetLastError();  // clear it: the caller retries
                                             return nullptr;
                                           }
                                           if (status != cudaSuccess)
                                             throw_cuda_error(cudaGetErrorName(status), cudaGetErrorString(status),
                                                              "cudaMalloc(&ptr, bytes)", __FILE__, __LINE__);
                                           return ptr;
                                         },
                                         [index](void* ptr, std::size_t) {
                                           // Must not throw: errors here are left to the next call.
                                           if (cudaSetDevice(index) == cudaSuccess) cudaFree(ptr);
                                         },
                                         [index] { Context::get(index).drain(); }},
               CachingAllocator::Options{.name = "cuda:" + std::to_string(index),
                                         .caching = !caching_disabled_by_env(),
                                         .max_cached_bytes = 0,
                                         .max_reserved_bytes = cuda_memory_limit_from_env(),
                                         .limit_source = kCudaMemoryLimitVariable}) {}
  void* allocate(std::size_t bytes) override { return cache_.allocate(bytes); }
  void deallocate(void* ptr, std::size_t bytes) override { cache_.deallocate(ptr, bytes); }
  Device device() const override { return Device::cuda(index_); }
  std::size_t bytes_in_use() const override { return cache_.bytes_in_use(); }
  AllocatorStats stats() const override { return cache_.stats(); }
  // Waits for the device's stream first (Backend::synchronize), so no queued kernel still reads
  // a block that goes back to the driver.
  void empty_cache() override { cache_.empty_cache(); }

 private:
  int index_;
  CachingAllocator cache_;
};

// Element value converted to the dtype's bit pattern, for the fill kernel.
template <typename T>
__global__ void fill_kernel(T* dst, std::int64_t n, T value) {  // dst: (n)
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n; i += step)
    dst[i] = value;
}

template <typename T>
void launch_fill(void* dst, std::int64_t n, T value, cudaStream_t stream) {
  if (n == 0) return;
  const int threads = 256;
  const std::int64_t wanted = (n + threads - 1) / threads;
  const auto blocks = static_cast<unsigned>(wanted < (1 << 20) ? wanted : (1 << 20));  // grid-stride beyond
  fill_kernel<T><<<blocks, threads, 0, stream>>>(static_cast<T*>(dst), n, value);
  ATTNLAB_CUDA_CHECK_LAUNCH();
}

}  // namespace

int device_count(std::string* why) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error
    if (why) *why = std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
    return 0;
  }
  if (why) *why = count == 0 ? "cudaGetDeviceCount reports 0 devices" : "";
  return count;
}

void compute_capability(int index, int& major, int& minor, std::string& name) {
  cudaDeviceProp p{};
  ATTNLAB_CUDA_CHECK(cudaGetDeviceProperties(&p, index));
  major = p.major;
  minor = p.minor;
  name = p.name;
}

std::string describe(int index) {
  cudaDeviceProp p{};
  ATTNLAB_CUDA_CHECK(cudaGetDeviceProperties(&p, index));
  int driver = 0;
  ATTNLAB_CUDA_CHECK(cudaDriverGetVersion(&driver));
  char memory[32];
  std::snprintf(memory, sizeof(memory), "%.1f GiB", static_cast<double>(p.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0));
  return std::string(p.name) + ", " + memory + ", sm_" + std::to_string(p.major) + std::to_string(p.minor) +
         ", driver CUDA " + std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10);
}

Allocator& allocator(int index) {
  // Leaked like the contexts (context.cu): freeing device memory from static destructors at exit
  // would race the CUDA runtime's teardown. Lookups of created allocators are lock-free: this
  // runs for every tensor.
  static auto* const slots = new std::array<std::atomic<CudaAllocator*>, kMaxAllocators>{};
  static std::mutex mutex;
  if (index >= 0 && index < kMaxAllocators)
    if (CudaAllocator* a = (*slots)[static_cast<std::size_t>(index)].load(std::memory_order_acquire)) return *a;
  std::lock_guard lock(mutex);
  const int count = device_count();
  if (index < 0 || index >= count || index >= kMaxAllocators)
    throw_message("cuda:" + std::to_string(index) + " requested but " + std::to_string(count) +
                  " CUDA device(s) are visible");
  auto& slot = (*slots)[static_cast<std::size_t>(index)];
  CudaAllocator* a = slot.load(std::memory_order_relaxed);
  if (a == nullptr) {
    a = new CudaAllocator(index);
    slot.store(a, std::memory_order_release);
  }
  return *a;
}

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes) {
  if (bytes == 0) return;
  if (dst_device.is_cuda() && src_device.is_cuda() && dst_device.index != src_device.index) {
    // Between two devices: the source's queued writes first, then the copy on the destination's
    // stream, which is waited for because the source stream knows nothing of it.
    Context::get(src_device.index).synchronize();
    const Context& ctx = Context::get(dst_device.index);
    ctx.make_current();
    ATTNLAB_CUDA_CHECK(cudaMemcpyPeerAsync(dst, dst_device.index, src, src_device.index, bytes, ctx.stream()));
    ctx.synchronize();
    return;
  }
  cudaMemcpyKind kind = cudaMemcpyDeviceToDevice;
  if (dst_device.is_cuda() && src_device.is_cpu()) kind = cudaMemcpyHostToDevice;
  if (dst_device.is_cpu() && src_device.is_cuda()) kind = cudaMemcpyDeviceToHost;
  // On the stream of the device that holds the device side (the source's for a download), after
  // the kernels queued there.
  const Context& ctx = Context::get(dst_device.is_cuda() ? dst_device.index : src_device.index);
  ctx.make_current();
  ATTNLAB_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, ctx.stream()));
  // The host reads dst on return: a download waits for its copy. An upload does not: the caller
  // may free or overwrite src on return because a copy from pageable host memory (what CPU
  // tensors hold; nothing passes pinned memory here) returns only once the driver has staged the
  // data (CUDA's documented memcpy behaviour), and a kernel that reads dst is queued behind the
  // copy on the same stream.
  if (kind == cudaMemcpyDeviceToHost) {
    ctx.count_download();
    ctx.synchronize();
  }
}

void fill(void* dst, DType dtype, std::int64_t n, double value, int device_index) {
  const Context& ctx = Context::get(device_index);
  ctx.make_current();
  const cudaStream_t stream = ctx.stream();
  switch (dtype) {
    case DType::f32: launch_fill<float>(dst, n, static_cast<float>(value), stream); break;
    case DType::f64: launch_fill<double>(dst, n, value, stream); break;
    case DType::bf16: launch_fill<std::uint16_t>(dst, n, bf16(static_cast<float>(value)).bits, stream); break;
    case DType::i32: launch_fill<std::int32_t>(dst, n, static_cast<std::int32_t>(value), stream); break;
    case DType::i64: launch_fill<std::int64_t>(dst, n, static_cast<std::int64_t>(value), stream); break;
    case DType::u8: launch_fill<std::uint8_t>(dst, n, static_cast<std::uint8_t>(value), stream); break;
  }
}

DeviceScratch::DeviceScratch(int device_index, std::size_t bytes)
    : allocator_(&allocator(device_index)), bytes_(bytes), ptr_(allocator_->allocate(bytes)) {}

DeviceScratch::~DeviceScratch() { allocator_->deallocate(ptr_, bytes_); }

int current_device() {
  int index = 0;
  ATTNLAB_CUDA_CHECK(cudaGetDevice(&index));
  return index;
}

}  // namespace attnlab::cuda
