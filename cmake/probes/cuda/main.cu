// Built, never run: compiling a C++20 kernel and linking these calls is what the probe asks.
#include <concepts>

#include <cublasLt.h>
#include <cublas_v2.h>

template <std::floating_point T>
__global__ void scale(T* x, T s) { x[threadIdx.x] *= s; }  // x: (blockDim.x)

int main() {
  cublasLtHandle_t lt = nullptr;
  cublasHandle_t blas = nullptr;
  scale<float><<<1, 1>>>(nullptr, 2.0f);
  return cublasLtCreate(&lt) == CUBLAS_STATUS_SUCCESS && cublasCreate(&blas) == CUBLAS_STATUS_SUCCESS ? 0 : 1;
}
