// CUDA kernels of embedding.cpp. Forward: a gather, one thread per output element. Backward: a
// deterministic scatter-add without atomics. The ids (N integers) are copied to the host, which
// builds the same stable counting sort as embedding_cpu.cpp (positions grouped by id, increasing
// within a row); then one block owns each distinct row and sums its gradient rows in position
// order. The sums are therefore in the CPU's order: bit-identical to it, and independent of the
// launch configuration. The cost is one synchronous copy of the ids per backward. The three
// index arrays go to the device in scratch blocks of its caching allocator (cuda/scratch.h), not
// a cudaMalloc / cudaFree pair per backward.
#include <vector>

#include "cuda/elementwise.h"
#include "cuda/kernel_util.cuh"
#include "cuda/runtime.h"
#include "cuda/scratch.h"

namespace attnlab::cuda {
namespace {

template <typename T, typename I>
__global__ void embedding_forward_kernel(const T* weight,  // weight: (V, d)
                                         const I* ids,     // ids: (n), each in [0, V)
                                         std::int64_t n, std::int64_t d,
                                         T* out) {         // out: (n, d)
  const std::int64_t total = n * d;
  for (std::int64_t e = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t row = e / d, col = e % d;
    out[e] = weight[static_cast<std::int64_t>(ids[row]) * d + col];
  }
}

// Block u owns the distinct id rows[u]; its threads stride over the d columns and each adds the
// gradient rows order[start[u] .. start[u + 1]) in that order.
template <typename T>
__global__ void embedding_backward_kernel(const T* dout,              // dout: (n, d)
                                          const std::int64_t* rows,   // rows: (unique), ascending ids
                                          const std::int64_t* start,  // start: (unique + 1)
                                          const std::int64_t* order,  // order: (n), positions by id
                                          std::int64_t unique, std::int64_t d,
                                          T* dweight) {               // dweight: (V, d), zeroed
  for (std::int64_t u = blockIdx.x; u < unique; u += gridDim.x) {
    T* dst = dweight + rows[u] * d;
    for (std::int64_t j = threadIdx.x; j < d; j += blockDim.x) {
      compute_t<T> acc = 0;
      for (std::int64_t k = start[u]; k < start[u + 1]; ++k) acc += load(dout, order[k] * d + j);
      store(dst, j, acc);
    }
  }
}

template <typename Fn>
void dispatch_ids(DType ids_dtype, Fn&& fn) {
  switch (ids_dtype) {
    case DType::i32: fn(std::int32_t{}); return;
    case DType::i64: fn(std::int64_t{}); return;
    default: break;
  }
  throw_message("embedding: ids must be i32 or i64, got " + std::string(dtype_name(ids_dtype)));
}

}  // namespace

void embedding_forward(DType dtype, const void* weight, DType ids_dtype, const void* ids, std::int64_t n,
                       std::int64_t d, void* out, cudaStream_t stream) {
  if (n * d == 0) return;
  // Embedding rows are copied, never computed: bf16 moves as its 16-bit pattern.
  dispatch_floating("embedding", dtype, [&](auto ftag) {
    using T = decltype(ftag);
    dispatch_ids(ids_dtype, [&](auto itag) {
      using I = decltype(itag);
      embedding_forward_kernel<T, I><<<grid_for(n * d), kThreads, 0, stream>>>(
          static_cast<const T*>(weight), static_cast<const I*>(ids), n, d, static_cast<T*>(out));
      ATTNLAB_CUDA_CHECK_LAUNCH();
    });
  });
}

void embedding_backward(DType dtype, const void* dout, DType ids_dtype, const void* ids, std::int64_t n,
                        std::int64_t vocab, std::int64_t d, void* dweight, cudaStream_t stream) {
  dispatch_floating("embedding_backward", dtype, [&](auto ftag) {
    using T = decltype(ftag);
    ATTNLAB_CUDA_CHECK(cudaMemsetAsync(dweight, 0, static_cast<std::size_t>(vocab * d) * sizeof(T), stream));
    if (n == 0 || d == 0) return;
    // The ids on the host, as i64.
    std::vector<std::int64_t> host_ids(static_cast<std::size_t>(n));
    dispatch_ids(ids_dtype, [&](auto itag) {
      using I = decltype(itag);
      std::vector<I> raw(static_cast<std::size_t>(n));
      // Queued on the device's context stream (the one `stream` is), counted as a host wait.
      const int device = current_device();
      copy_bytes(raw.data(), Device::cpu(), ids, Device::cuda(device), raw.size() * sizeof(I));
      for (std::size_t i = 0; i < raw.size(); ++i) host_ids[i] = static_cast<std::int64_t>(raw[i]);
    });
    // Stable counting sort of the positions by id (as embedding_cpu.cpp).
    std::vector<std::int64_t> count(static_cast<std::size_t>(vocab) + 1, 0);
    for (std::int64_t id : host_ids) ++count[static_cast<std::size_t>(id) + 1];
    std::vector<std::int64_t> rows, start{0};
    for (std::int64_t r = 0; r < vocab; ++r) {
      const std::int64_t c = count[static_cast<std::size_t>(r) + 1];
      if (c > 0) {
        rows.push_back(r);
        start.push_back(start.back() + c);
      }
      count[static_cast<std::size_t>(r) + 1] += count[static_cast<std::size_t>(r)];
    }
    std::vector<std::int64_t> order(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i)
      order[static_cast<std::size_t>(count[static_cast<std::size_t>(host_ids[static_cast<std::size_t>(i)])]++)] = i;
    const auto unique = static_cast<std::int64_t>(rows.size());
    // The launchers' pointers are on the current device (cuda/elementwise.h), and so is `stream`.
    const int device = current_device();
    const DeviceScratch d_rows(device, rows.size() * sizeof(std::int64_t));
    const DeviceScratch d_start(device, start.size() * sizeof(std::int64_t));
    const DeviceScratch d_order(device, order.size() * sizeof(std::int64_t));
    ATTNLAB_CUDA_CHECK(cudaMemcpyAsync(d_rows.as<void>(), rows.data(), rows.size() * sizeof(std::int64_t),
                                       cudaMemcpyHostToDevice, stream));
    ATTNLAB_CUDA_CHECK(cudaMemcpyAsync(d_start.as<void>(), start.data(), start.size() * sizeof(std::int64_t),
                                       cudaMemcpyHostToDevice, stream));
    ATTNLAB_CUDA_CHECK(cudaMemcpyAsync(d_order.as<void>(), order.data(), order.size() * sizeof(std::int64_t),
                                       cudaMemcpyHostToDevice, stream));
    const unsigned blocks = static_cast<unsigned>(unique < 65535 ? unique : 65535);
    const int threads = d < 256 ? 128 : 256;
    embedding_backward_kernel<T><<<blocks, threads, 0, stream>>>(
        static_cast<const T*>(dout), d_rows.as<const std::int64_t>(), d_start.as<const std::int64_t>(),
        d_order.as<const std::int64_t>(), unique, d, static_cast<T*>(dweight));
    ATTNLAB_CUDA_CHECK_LAUNCH();
    // No wait for the kernel: the scratch blocks go back to the allocator, whose next owner's work
    // is queued after this kernel on the same stream, and the host vectors may die too, since a
    // copy from pageable host memory returns only once the data is staged (CUDA's documented
    // behaviour for cudaMemcpyAsync from pageable memory).
  });
}

}  // namespace attnlab::cuda
