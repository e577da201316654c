#pragma once
// ATTNLAB_HOST_DEVICE marks a function that both compilers read: inline on the host, and a
// forced-inline __host__ __device__ function under nvcc. For headers without fmt that the CPU
// paths and the CUDA kernels share (philox.h, plugin/kernel_term_math.h).
#if defined(__CUDACC__)
#define ATTNLAB_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define ATTNLAB_HOST_DEVICE inline
#endif
