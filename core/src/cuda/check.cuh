#pragma once
// Turns CUDA errors into attnlab::Error naming the call and the place. .cu files include this
// instead of attnlab/error.h: nvcc cannot compile fmt's consteval format strings.
#include <string>

#include <cuda_runtime.h>

namespace attnlab::cuda {
[[noreturn]] void throw_cuda_error(const char* error_name, const char* error_text, const char* call,
                                   const char* file, int line);
// The same for a cuBLAS status (ATTNLAB_CUBLAS_CHECK).
[[noreturn]] void throw_cublas_error(const char* status_name, const char* status_text,
                                     const char* call, const char* file, int line);
[[noreturn]] void throw_message(const std::string& message);
}  // namespace attnlab::cuda

#define ATTNLAB_CUDA_CHECK(call)                                                                  \
  do {                                                                                            \
    cudaError_t status_ = (call);                                                                 \
    if (status_ != cudaSuccess)                                                                   \
      ::attnlab::cuda::throw_cuda_error(cudaGetErrorName(status_), cudaGetErrorString(status_),   \
                                        #call, __FILE__, __LINE__);                               \
  } while (0)

// After a kernel launch.
#define ATTNLAB_CUDA_CHECK_LAUNCH() ATTNLAB_CUDA_CHECK(cudaGetLastError())

// For the files that include <cublas_v2.h> (this header does not: it stays light for the others).
#define ATTNLAB_CUBLAS_CHECK(call)                                                                \
  do {                                                                                            \
    cublasStatus_t status_ = (call);                                                              \
    if (status_ != CUBLAS_STATUS_SUCCESS)                                                         \
      ::attnlab::cuda::throw_cublas_error(cublasGetStatusName(status_),                           \
                                          cublasGetStatusString(status_), #call, __FILE__,        \
                                          __LINE__);                                              \
  } while (0)
