// Per-device contexts: a registry created on first use, holding one Context per device.
#include <cublasLt.h>
#include <cublas_v2.h>

#include <execinfo.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>

#include "cuda/check.cuh"
#include "cuda/context.h"
#include "cuda/launch.h"
#include "cuda/runtime.h"
#include "attnlab/env.h"

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

// ATTNLAB_TRACE_HOST_WAITS on: every host wait prints where it came from.
bool trace_host_waits() {
  static const bool on = env::flag("ATTNLAB_TRACE_HOST_WAITS");
  return on;
}

// The call stack of a host wait, to stderr: the exported functions of the core and the plugins
// appear by their (mangled) names, which is enough to find the op that waited.
void print_wait_stack(int device, std::int64_t count) {
  std::array<void*, 24> frames{};
  const int n = backtrace(frames.data(), static_cast<int>(frames.size()));
  std::fprintf(stderr, "host wait %lld on cuda:%d, from:\n", static_cast<long long>(count), device);
  std::fflush(stderr);
  backtrace_symbols_fd(frames.data() + 1, n - 1, STDERR_FILENO);  // frame 0 is this function
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
  checks_ = new IndexCheckLog(kIndexCheckSlots);  // never deleted, like the context
  void* words = nullptr;
  void* host = nullptr;
  ATTNLAB_CUDA_CHECK(cudaMalloc(&words, kIndexCheckSlots * sizeof(std::uint64_t)));
  ATTNLAB_CUDA_CHECK(cudaMemset(words, 0xff, kIndexCheckSlots * sizeof(std::uint64_t)));  // all kClean
  ATTNLAB_CUDA_CHECK(cudaHostAlloc(&host, kIndexCheckSlots * sizeof(std::uint64_t), cudaHostAllocDefault));
  check_words_ = static_cast<std::uint64_t*>(words);
  check_host_ = static_cast<std::uint64_t*>(host);
}

void Context::make_current() const { ATTNLAB_CUDA_CHECK(cudaSetDevice(index_)); }

void Context::drain() const {
  const std::int64_t count = synchronizations_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (trace_host_waits()) print_wait_stack(index_, count);
  ATTNLAB_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void Context::synchronize() const {
  std::optional<std::string> problem;
  {
    std::lock_guard lock(checks_mutex_);
    const std::size_t pending = checks_->pending();
    const std::size_t bytes = pending * sizeof(std::uint64_t);
    // The words after the kernels that write them; the host reads the copy after the wait.
    if (pending > 0)
      ATTNLAB_CUDA_CHECK(cudaMemcpyAsync(check_host_, check_words_, bytes, cudaMemcpyDeviceToHost, stream_));
    drain();
    if (pending == 0) return;
    ATTNLAB_CUDA_CHECK(cudaMemsetAsync(check_words_, 0xff, bytes, stream_));  // kClean for their next owners
    problem = checks_->collect({check_host_, pending}, "cuda:" + std::to_string(index_));
  }
  if (problem) throw_message(*problem);
}

std::uint64_t* Context::reserve_index_check(IndexCheck check) const {
  for (;;) {
    {
      std::lock_guard lock(checks_mutex_);
      if (const auto slot = checks_->reserve(check)) return check_words_ + *slot;
    }
    synchronize();  // every word pending: read them back, then reserve again
  }
}

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

std::uint64_t* reserve_index_check(int device_index, const IndexCheck& check) {
  return Context::get(device_index).reserve_index_check(check);
}

void synchronize(int device_index) { Context::get(device_index).synchronize(); }

void host_waits(int device_index, std::int64_t& synchronizations, std::int64_t& downloads) {
  const Context& ctx = Context::get(device_index);
  synchronizations = ctx.synchronizations();
  downloads = ctx.downloads();
}

}  // namespace attnlab::cuda
