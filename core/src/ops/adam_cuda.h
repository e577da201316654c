#pragma once
// The multi-tensor Adam launcher of adam_cuda.cu (plain types, no CUDA headers); the one-tensor
// launcher is cuda/elementwise.h's adam_update.
#include <cstdint>

#include "attnlab/dtype.h"
#include "cuda/launch.h"
#include "ops/adam_multi_plan.h"
#include "ops/adam_scalars.h"

namespace attnlab::cuda {

// One launch of adam_multi::plan, passed to the kernel by value: tensor k of the launch has
// numel[k] elements at param[k], grad[k], m[k], v[k] (device pointers, one dtype) and, where not
// null, a bf16 copy at bf16_copy[k]; block b updates chunk[b] of tensor slot[b].
struct AdamMultiTable {
  void* param[detail::adam_multi::kMaxTensors];
  const void* grad[detail::adam_multi::kMaxTensors];
  void* m[detail::adam_multi::kMaxTensors];
  void* v[detail::adam_multi::kMaxTensors];
  void* bf16_copy[detail::adam_multi::kMaxTensors];  // null, or bf16 (n): receives bf16(param) as updated
  std::int64_t numel[detail::adam_multi::kMaxTensors];
  std::int32_t chunk[detail::adam_multi::kMaxBlocks];
  std::uint8_t slot[detail::adam_multi::kMaxBlocks];
};
// Kernel parameters are limited to 4 KiB; the table leaves room for the scalars.
static_assert(sizeof(AdamMultiTable) <= 3584, "AdamMultiTable must fit in the kernel parameters");
static_assert(detail::adam_multi::kMaxTensors <= 256, "slot is a uint8");

// blocks in [1, kMaxBlocks]: block b updates elements [chunk[b] * chunk_size, (chunk[b] + 1) * chunk_size)
// of its tensor (fewer at the tensor's end), as adam_update does element by element.
void adam_update_multi(DType dtype, const AdamMultiTable& table, int blocks, std::int64_t chunk_size,
                       const detail::AdamStepScalars& h, cudaStream_t stream);

}  // namespace attnlab::cuda
