#pragma once
// How adam_step_multi's CUDA path splits a list of tensors into kernel launches (adam_cuda.cu).
// Every block of a launch updates one chunk (at most `chunk` consecutive elements) of one tensor;
// a launch holds at most kMaxTensors tensors and kMaxBlocks blocks, so that its table of pointers,
// sizes and block assignments travels in the kernel's parameters (adam_cuda.h). Plain C++: the
// plan is tested on the CPU.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace attnlab::detail::adam_multi {

inline constexpr int kMaxTensors = 36;
inline constexpr int kMaxBlocks = 320;
inline constexpr std::int64_t kChunk = 1 << 16;

struct Block {
  int slot;            // the launch's tensor slot
  std::int64_t chunk;  // elements [chunk * chunk_size, (chunk + 1) * chunk_size) of that tensor
};

struct Launch {
  std::vector<std::size_t> tensors;  // slot -> index into the list
  std::vector<Block> blocks;
};

// Launches that cover every element of every tensor (numel[i] elements) exactly once, in list
// order; empty tensors take no slot. A tensor whose chunks do not fit in one launch continues in
// slot 0 of the next.
std::vector<Launch> plan(std::span<const std::int64_t> numel, std::int64_t chunk_size = kChunk,
                         int max_tensors = kMaxTensors, int max_blocks = kMaxBlocks);

}  // namespace attnlab::detail::adam_multi
