// adam_update_multi_cuda: plan the launches and fill their tables (CUDA builds only).
#include <cmath>
#include <limits>
#include <vector>

#include "cuda/elementwise.h"
#include "cuda/launch.h"
#include "ops/adam_cuda.h"
#include "ops/adam_kernels.h"

namespace attnlab::detail {

void adam_update_multi_cuda(std::span<const Tensor> params, std::span<const Tensor> grads,
                            std::span<const Tensor> m, std::span<const Tensor> v, const AdamHyper& h,
                            std::span<const Tensor> bf16_copies) {
  if (params.empty()) return;
  cuda::set_device(params[0].device().index);
  const cudaStream_t stream = cuda::current_stream(params[0].device().index);
  const AdamStepScalars scalars = adam_step_scalars(h);
  std::vector<std::int64_t> numel;
  for (const Tensor& p : params) numel.push_back(p.numel());
  for (const adam_multi::Launch& launch : adam_multi::plan(numel)) {
    cuda::AdamMultiTable table{};
    for (std::size_t s = 0; s < launch.tensors.size(); ++s) {
      const std::size_t k = launch.tensors[s];
      table.param[s] = params[k].raw_data();
      table.grad[s] = grads[k].raw_data();
      table.m[s] = m[k].raw_data();
      table.v[s] = v[k].raw_data();
      table.bf16_copy[s] = bf16_copies.empty() || !bf16_copies[k].defined() ? nullptr : bf16_copies[k].raw_data();
      table.numel[s] = numel[k];
    }
    for (std::size_t b = 0; b < launch.blocks.size(); ++b) {
      ATTNLAB_CHECK(launch.blocks[b].chunk <= std::numeric_limits<std::int32_t>::max(),
                    "adam_step_multi: a tensor of {} elements has more than 2^31 chunks of {}",
                    numel[launch.tensors[static_cast<std::size_t>(launch.blocks[b].slot)]], adam_multi::kChunk);
      table.chunk[b] = static_cast<std::int32_t>(launch.blocks[b].chunk);
      table.slot[b] = static_cast<std::uint8_t>(launch.blocks[b].slot);
    }
    cuda::adam_update_multi(params[0].dtype(), table, static_cast<int>(launch.blocks.size()), adam_multi::kChunk,
                            scalars, stream);
  }
}

}  // namespace attnlab::detail
