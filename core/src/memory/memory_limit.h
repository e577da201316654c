#pragma once
// A cap on the memory each CUDA device's caching allocator holds (ATTNLAB_CUDA_MEMORY_LIMIT), for
// sharing one GPU among runs (a suite's --jobs) or for finding the batch that fits a smaller GPU:
// an allocation beyond it fails as the device's own out of memory does (caching_allocator.h).
// Plain header (no fmt): the CUDA runtime reads it.
#include <cstddef>
#include <string_view>

namespace attnlab {

inline constexpr const char* kCudaMemoryLimitVariable = "ATTNLAB_CUDA_MEMORY_LIMIT";

// A size such as "8GiB", "512 MiB", "1.5GiB", "20GB" or "1000000" (bytes): KiB, MiB, GiB and TiB
// are powers of 1024, KB, MB, GB and TB powers of 1000. Throws Error naming `what` and the text
// when it is not a size of at least one byte.
std::size_t parse_memory_size(std::string_view text, std::string_view what);

// The limit ATTNLAB_CUDA_MEMORY_LIMIT sets; 0 (none) when it is unset or empty.
std::size_t cuda_memory_limit_from_env();

}  // namespace attnlab
