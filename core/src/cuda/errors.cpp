// Host-side error builders for the .cu files (no CUDA headers needed here).
#include <string>

#include "attnlab/error.h"

namespace attnlab::cuda {

void throw_cuda_error(const char* error_name, const char* error_text, const char* call,
                      const char* file, int line) {
  throw Error(fmt::format("CUDA error {} ({}) in {} at {}:{}", error_name, error_text, call, file, line));
}

void throw_cublas_error(const char* status_name, const char* status_text, const char* call,
                        const char* file, int line) {
  throw Error(fmt::format("cuBLAS error {} ({}) in {} at {}:{}", status_name, status_text, call, file, line));
}

void throw_cudnn_error(const char* status_text, const char* call, const char* file, int line) {
  throw Error(fmt::format("cuDNN error {} in {} at {}:{}", status_text, call, file, line));
}

void throw_message(const std::string& message) { throw Error(message); }

}  // namespace attnlab::cuda
