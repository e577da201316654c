#pragma once
// What the plain launcher headers (ops/*_cuda.h) need without the CUDA headers, so that .cpp
// files can include them: cudaStream_t (the same typedef as cuda_runtime_api.h), the stream of a
// device, its index-check words, and the largest rank that kernels taking shapes by value accept.
#include <cstdint>

struct CUstream_st;
typedef struct CUstream_st* cudaStream_t;

namespace attnlab {
struct IndexCheck;
}

namespace attnlab::cuda {

inline constexpr int kMaxRank = 8;

// The stream every kernel, cuBLAS call and copy on CUDA device `device_index` goes to: the
// device's Context stream (cuda/context.h), created on first use. Pass it explicitly to every
// launch (`kernel<<<grid, block, shared, cuda::current_stream(device)>>>`) and to every
// cudaMemcpyAsync / cudaMemsetAsync; read results on the host only after a synchronisation
// (Tensor::to(Device::cpu()) does it). Does not change the calling thread's current device.
// Throws attnlab::Error when the device is not visible.
cudaStream_t current_stream(int device_index);

// The index-check word of one kernel about to be queued on device `device_index`'s stream
// (Context::reserve_index_check; index_check.h says what a kernel writes there). A bad index the
// kernel records is thrown as `check`'s error at the host's next wait for the device.
std::uint64_t* reserve_index_check(int device_index, const IndexCheck& check);

// The legacy default stream. Do not use it in new code: launches there are still ordered with
// current_stream() (the context's stream is a blocking stream), but they serialise with every
// stream of the device. Kept so that launchers written against it compile until converted.
inline constexpr cudaStream_t kDefaultStream = nullptr;

}  // namespace attnlab::cuda
