#pragma once
// Turns CUDA, cuBLAS / cuBLASLt and cuDNN errors into attnlab::Error naming the error, the call
// and the place (file:line). .cu files include this instead of attnlab/error.h: nvcc cannot
// compile fmt's consteval format strings.
#include <string>

#include <cuda_runtime.h>

namespace attnlab::cuda {
[[noreturn]] void throw_cuda_error(const char* error_name, const char* error_text, const char* call,
                                   const char* file, int line);
// The same for a cuBLAS status (ATTNLAB_CUBLAS_CHECK).
[[noreturn]] void throw_cublas_error(const char* status_name, const char* status_text,
                                     const char* call, const char* file, int line);
// The same for a cuDNN status (ATTNLAB_CUDNN_CHECK).
[[noreturn]] void throw_cudnn_error(const char* status_text, const char* call, const char* file, int line);
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

// For the files that include <cublas_v2.h> or <cublasLt.h> (both return cublasStatus_t; this
// header includes neither: it stays light for the others).
#define ATTNLAB_CUBLAS_CHECK(call)                                                                \
  do {                                                                                            \
    cublasStatus_t status_ = (call);                                                              \
    if (status_ != CUBLAS_STATUS_SUCCESS)                                                         \
      ::attnlab::cuda::throw_cublas_error(cublasGetStatusName(status_),                           \
                                          cublasGetStatusString(status_), #call, __FILE__,        \
                                          __LINE__);                                              \
  } while (0)

// For the files that include <cudnn.h>.
#define ATTNLAB_CUDNN_CHECK(call)                                                                 \
  do {                                                                                            \
    cudnnStatus_t status_ = (call);                                                               \
    if (status_ != CUDNN_STATUS_SUCCESS)                                                          \
      ::attnlab::cuda::throw_cudnn_error(cudnnGetErrorString(status_), #call, __FILE__, __LINE__); \
  } while (0)
