// The backward launcher of embedding.cpp's CUDA path (kernels in embedding_cuda_kernels.cuh): the
// positions sorted by id on the device with CUB's stable radix sort, then one block per run of
// equal ids. No host copy and no wait; the scratch (keys, positions, both sorted, and CUB's
// temporary storage) comes from the device's caching allocator (cuda/scratch.h).
#include <bit>

#include <cub/device/device_radix_sort.cuh>

#include "cuda/elementwise.h"
#include "cuda/kernel_util.cuh"
#include "cuda/scratch.h"
#include "ops/embedding_cuda_kernels.cuh"

namespace attnlab::cuda {

void embedding_backward(DType dtype, const void* dout, DType ids_dtype, const void* ids, std::int64_t n,
                        std::int64_t vocab, std::int64_t d, void* dweight, cudaStream_t stream) {
  dispatch_floating("embedding_backward", dtype, [&](auto ftag) {
    using T = decltype(ftag);
    ATTNLAB_CUDA_CHECK(cudaMemsetAsync(dweight, 0, static_cast<std::size_t>(vocab * d) * sizeof(T), stream));
    if (n == 0 || d == 0) return;
    if (n >= index_check::kMaxCheckedPositions || vocab >= index_check::kMaxCheckedPositions)
      throw_message("embedding_backward: at most 2^32 - 2 ids and rows on cuda, got " + std::to_string(n) +
                    " ids and " + std::to_string(vocab) + " rows");
    const int device = current_device();
    const auto words = static_cast<std::size_t>(n) * sizeof(std::uint32_t);
    const DeviceScratch keys(device, words), positions(device, words);
    const DeviceScratch sorted_keys(device, words), sorted_positions(device, words);
    dispatch_index("embedding_backward", ids_dtype, [&](auto itag) {
      using I = decltype(itag);
      embedding_kernels::sort_input_kernel<I><<<grid_for(n), kThreads, 0, stream>>>(
          static_cast<const I*>(ids), n, vocab, keys.as<std::uint32_t>(), positions.as<std::uint32_t>());
      ATTNLAB_CUDA_CHECK_LAUNCH();
    });
    // Keys are at most V: only their low bit_width(V) bits take part in the sort.
    const int end_bit = static_cast<int>(std::bit_width(static_cast<std::uint64_t>(vocab)));
    std::size_t temp_bytes = 0;
    ATTNLAB_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
        nullptr, temp_bytes, keys.as<const std::uint32_t>(), sorted_keys.as<std::uint32_t>(),
        positions.as<const std::uint32_t>(), sorted_positions.as<std::uint32_t>(), n, 0, end_bit, stream));
    const DeviceScratch temp(device, temp_bytes);
    ATTNLAB_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
        temp.as<void>(), temp_bytes, keys.as<const std::uint32_t>(), sorted_keys.as<std::uint32_t>(),
        positions.as<const std::uint32_t>(), sorted_positions.as<std::uint32_t>(), n, 0, end_bit, stream));
    const unsigned blocks = static_cast<unsigned>(n < 65535 ? n : 65535);
    const int threads = d < 256 ? 128 : 256;
    embedding_kernels::run_sum_kernel<T><<<blocks, threads, 0, stream>>>(
        static_cast<const T*>(dout), sorted_keys.as<const std::uint32_t>(),
        sorted_positions.as<const std::uint32_t>(), n, vocab, d, static_cast<T*>(dweight));
    ATTNLAB_CUDA_CHECK_LAUNCH();
    // No wait: the scratch blocks go back to the allocator, whose next owners' work is queued
    // after these kernels on the same stream.
  });
}

}  // namespace attnlab::cuda
