#pragma once
// Per-device CUDA state: the stream the core's work on a device goes to and the cuBLAS handle
// bound to it. A plain header: the CUDA and cuBLAS handle types are forward declared (they are
// pointers to these incomplete structs in the vendor headers), so any file may include it.
struct CUstream_st;    // cudaStream_t = CUstream_st*
struct cublasContext;  // cublasHandle_t = cublasContext*

namespace attnlab::cuda {

class Context {
 public:
  // The context of CUDA device `index`, created on first use: the device's stream (the legacy
  // default stream for now, so work is ordered with the synchronous copies of runtime.cu) and a
  // cuBLAS handle on that stream with CUBLAS_DEFAULT_MATH (no TF32: f32 GEMMs are full f32).
  // Thread-safe to obtain; the handle itself must not be used by two threads at once.
  // Throws attnlab::Error when `index` is not a visible device or a CUDA / cuBLAS call fails.
  static Context& get(int index);

  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  int device_index() const { return index_; }
  // Makes this context's device current on the calling thread (call before using the handle).
  void make_current() const;
  CUstream_st* stream() const { return stream_; }     // nullptr: the legacy default stream
  cublasContext* cublas() const { return cublas_; }

 private:
  explicit Context(int index);
  // No destructor work: contexts are never destroyed (see the registry in context.cu).

  int index_;
  CUstream_st* stream_ = nullptr;
  cublasContext* cublas_ = nullptr;
};

}  // namespace attnlab::cuda
