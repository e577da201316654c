#include "ops/adam_multi_plan.h"

namespace attnlab::detail::adam_multi {

std::vector<Launch> plan(std::span<const std::int64_t> numel, std::int64_t chunk_size, int max_tensors,
                         int max_blocks) {
  std::vector<Launch> launches;
  Launch current;
  auto flush = [&] {
    if (!current.blocks.empty()) launches.push_back(std::move(current));
    current = Launch{};
  };
  for (std::size_t i = 0; i < numel.size(); ++i) {
    if (numel[i] <= 0) continue;
    if (static_cast<int>(current.tensors.size()) == max_tensors) flush();
    current.tensors.push_back(i);
    const std::int64_t chunks = (numel[i] + chunk_size - 1) / chunk_size;
    for (std::int64_t c = 0; c < chunks; ++c) {
      if (static_cast<int>(current.blocks.size()) == max_blocks) {
        flush();
        current.tensors.push_back(i);  // the rest of tensor i, in slot 0 of the next launch
      }
      current.blocks.push_back({static_cast<int>(current.tensors.size()) - 1, c});
    }
  }
  flush();
  return launches;
}

}  // namespace attnlab::detail::adam_multi
