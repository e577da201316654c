#pragma once
// What the plain launcher headers (ops/*_cuda.h) need without the CUDA headers, so that .cpp
// files can include them: cudaStream_t (the same typedef as cuda_runtime_api.h) and the largest
// rank that kernels taking shapes by value accept.
struct CUstream_st;
typedef struct CUstream_st* cudaStream_t;

namespace attnlab::cuda {
inline constexpr int kMaxRank = 8;
// The legacy default stream, passed explicitly until a session object owns streams.
inline constexpr cudaStream_t kDefaultStream = nullptr;
}  // namespace attnlab::cuda
