// Per-device contexts: a registry created on first use, holding one Context per device.
#include <cublas_v2.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cuda/check.cuh"
#include "cuda/context.h"
#include "cuda/runtime.h"

namespace attnlab::cuda {
namespace {

struct Registry {
  std::mutex mutex;
  std::vector<std::unique_ptr<Context>> contexts;  // one slot per visible device
};

// Leaked on purpose: only a pointer lives in static storage, and the registry (with its cuBLAS
// handles) is never destroyed. Destroying handles from a static destructor at exit runs after,
// or in the middle of, the CUDA runtime's own teardown, where cublasDestroy can fail or crash;
// the driver reclaims everything when the process ends.
Registry& registry() {
  static Registry* const instance = new Registry;
  return *instance;
}

}  // namespace

Context::Context(int index) : index_(index) {
  ATTNLAB_CUDA_CHECK(cudaSetDevice(index_));
  cublasHandle_t handle = nullptr;
  ATTNLAB_CUBLAS_CHECK(cublasCreate(&handle));
  cublas_ = handle;
  ATTNLAB_CUBLAS_CHECK(cublasSetStream(handle, stream_));
  // Explicit even though it is cuBLAS's default: TF32 tensor-core math stays off for f32.
  ATTNLAB_CUBLAS_CHECK(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
}

void Context::make_current() const { ATTNLAB_CUDA_CHECK(cudaSetDevice(index_)); }

Context& Context::get(int index) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  const int count = device_count();
  if (index < 0 || index >= count)
    throw_message("cuda:" + std::to_string(index) + " requested but " + std::to_string(count) +
                  " CUDA device(s) are visible");
  if (r.contexts.empty()) r.contexts.resize(static_cast<std::size_t>(count));
  auto& slot = r.contexts[static_cast<std::size_t>(index)];
  if (!slot) slot.reset(new Context(index));  // the constructor is private
  return *slot;
}

}  // namespace attnlab::cuda
