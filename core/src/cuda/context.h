#pragma once
// Per-device CUDA state: the one stream all of the core's work on a device goes to, the cuBLAS and
// cuBLASLt handles bound to it and cuBLASLt's workspace. A plain header: the CUDA and cuBLAS
// handle types are forward declared (they are pointers to these incomplete structs in the vendor
// headers), so any file may include it. Launchers that only need the stream call
// cuda::current_stream(device) from cuda/launch.h.
//
// One stream per device is what makes the caching allocator safe (caching_allocator.h): the host
// may free a tensor while kernels that read it are still queued, because whatever reuses its
// memory is queued behind them on the same stream. Work that needs another stream must wait for
// this one first (and the memory it touches must outlive that wait).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "device/index_check_log.h"

struct CUstream_st;      // cudaStream_t = CUstream_st*
struct cublasContext;    // cublasHandle_t = cublasContext*
struct cublasLtContext;  // cublasLtHandle_t = cublasLtContext*

namespace attnlab::cuda {

class Context {
 public:
  // The context of CUDA device `index`, created on first use: a stream created for the device
  // (a blocking stream: it stays ordered with the legacy default stream, so code that still
  // launches there is correct, only slower), a cuBLAS handle on that stream with
  // CUBLAS_DEFAULT_MATH (no TF32 unless a GEMM asks for it through its compute type), a
  // cuBLASLt handle and a workspace for it. Thread-safe and cheap to obtain after the first call;
  // a handle must not be used by two threads at once.
  // Throws attnlab::Error when `index` is not a visible device or a CUDA / cuBLAS call fails.
  static Context& get(int index);

  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  int device_index() const { return index_; }
  // Makes this context's device current on the calling thread (call before using the handles).
  void make_current() const;
  CUstream_st* stream() const { return stream_; }
  cublasContext* cublas() const { return cublas_; }
  cublasLtContext* cublas_lt() const { return cublas_lt_; }
  void* workspace() const { return workspace_; }
  std::size_t workspace_bytes() const { return workspace_bytes_; }
  // Blocks the host until the stream's queued work is done. Counted (host_waits()). Then reads
  // the index checks queued since the last read (reserve_index_check) and throws the first one's
  // error (attnlab::Error) when a kernel found a bad index.
  void synchronize() const;
  // The same wait, leaving the index checks for the next synchronize(): for the caching
  // allocator, which waits from code that must not throw an op's error (tensor destructors).
  void drain() const;
  // The device word for the index check of one kernel about to be queued on this stream
  // (index_check.h): index_check::kClean until the kernel records a bad index there. Reading the
  // words back is one small copy inside the next synchronize(); when all kIndexCheckSlots are
  // pending, this reads them first (a wait, which may throw an earlier check's error). One
  // thread queues work on a device at a time, as for the handles.
  std::uint64_t* reserve_index_check(IndexCheck check) const;
  static constexpr std::size_t kIndexCheckSlots = 16384;
  // Counts a device-to-host copy (the caller waits for it with synchronize()).
  void count_download() const { downloads_.fetch_add(1, std::memory_order_relaxed); }
  // How often the host has waited for this stream (synchronize()) and copied from this device,
  // since the context was created. With ATTNLAB_TRACE_HOST_WAITS=1 in the environment each wait
  // also prints its call stack to stderr, to find where a training step waits.
  std::int64_t synchronizations() const { return synchronizations_.load(std::memory_order_relaxed); }
  std::int64_t downloads() const { return downloads_.load(std::memory_order_relaxed); }

 private:
  explicit Context(int index);
  // No destructor work: contexts are never destroyed (see the registry in context.cu).

  int index_;
  CUstream_st* stream_ = nullptr;
  cublasContext* cublas_ = nullptr;
  cublasLtContext* cublas_lt_ = nullptr;
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
  // The index checks: the log of pending checks, their words on the device (kIndexCheckSlots,
  // kClean unless a kernel recorded a bad index) and pinned host memory they are read back into.
  mutable std::mutex checks_mutex_;
  IndexCheckLog* checks_ = nullptr;
  std::uint64_t* check_words_ = nullptr;
  std::uint64_t* check_host_ = nullptr;
  mutable std::atomic<std::int64_t> synchronizations_{0};
  mutable std::atomic<std::int64_t> downloads_{0};
};

}  // namespace attnlab::cuda
