// Per-device contexts: a registry created on first use, holding one Context per device.
#include <cublasLt.h>
#include <cublas_v2.h>

#include <array>
#include <atomic>
#include <mutex>
#include <string>

#include "cuda/check.cuh"
#include "cuda/context.h"
#include "cuda/launch.h"
#include "cuda/runtime.h"

namespace attnlab::cuda {
namespace {

constexpr int kMaxDevices = 64;
// cuBLASLt's workspace per device: 32 MiB, what NVIDIA recommends for Hopper.
constexpr std::size_t kLtWorkspaceBytes = std::size_t{32} << 20;

struct Registry {
  std::mutex mutex;  // guards creation; lookups of created contexts are lock-free
  std::array<std::atomic<Context*>, kMaxDevices> contexts{};
};

// Leaked on purpose: only a pointer lives in static storage, and the registry (with its streams,
// handles and workspaces) is never destroyed. Destroying handles from a static destructor at
// exit runs after, or in the middle of, the CUDA runtime's own teardown, where cublasDestroy can
// fail or crash; the driver reclaims everything when the process ends.
Registry& registry() {
  static Registry* const instance = new Registry;
  return *instance;
}

}  // namespace

Context::Context(int index) : index_(index) {
  ATTNLAB_CUDA_CHECK(cudaSetDevice(index_));
  cudaStream_t stream = nullptr;
  // cudaStreamDefault (blocking): ordered with the legacy default stream, so launches that still
  // pass kDefaultStream (launch.h) cannot race with this stream.
  ATTNLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamDefault));
  stream_ = stream;
  cublasHandle_t handle = nullptr;
  ATTNLAB_CUBLAS_CHECK(cublasCreate(&handle));
  cublas_ = handle;
  ATTNLAB_CUBLAS_CHECK(cublasSetStream(handle, stream_));
  // Explicit even though it is cuBLAS's default: TF32 tensor-core math stays off for f32 unless
  // a GEMM asks for CUBLAS_COMPUTE_32F_FAST_TF32 (precision tf32).
  ATTNLAB_CUBLAS_CHECK(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
  cublasLtHandle_t lt = nullptr;
  ATTNLAB_CUBLAS_CHECK(cublasLtCreate(&lt));
  cublas_lt_ = lt;
  ATTNLAB_CUDA_CHECK(cudaMalloc(&workspace_, kLtWorkspaceBytes));
  workspace_bytes_ = kLtWorkspaceBytes;
}

void Context::make_current() const { ATTNLAB_CUDA_CHECK(cudaSetDevice(index_)); }

void Context::synchronize() const { ATTNLAB_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

Context& Context::get(int index) {
  Registry& r = registry();
  if (index >= 0 && index < kMaxDevices)
    if (Context* c = r.contexts[static_cast<std::size_t>(index)].load(std::memory_order_acquire)) return *c;
  std::lock_guard lock(r.mutex);
  const int count = device_count();
  if (index < 0 || index >= count)
    throw_message("cuda:" + std::to_string(index) + " requested but " + std::to_string(count) +
                  " CUDA device(s) are visible");
  if (index >= kMaxDevices)
    throw_message("cuda:" + std::to_string(index) + ": attnlab supports at most " + std::to_string(kMaxDevices) +
                  " devices per process");
  auto& slot = r.contexts[static_cast<std::size_t>(index)];
  Context* c = slot.load(std::memory_order_relaxed);
  if (c == nullptr) {
    c = new Context(index);  // the constructor is private; never deleted (see registry())
    slot.store(c, std::memory_order_release);
  }
  return *c;
}

cudaStream_t current_stream(int device_index) { return Context::get(device_index).stream(); }

void synchronize(int device_index) { Context::get(device_index).synchronize(); }

}  // namespace attnlab::cuda
