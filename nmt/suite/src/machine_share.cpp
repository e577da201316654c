#include "attnlab/nmt/suite/machine_share.h"

#include <algorithm>
#include <cstdlib>

#include <fmt/core.h>
#include <fmt/format.h>

#include "attnlab/device.h"
#include "attnlab/error.h"

namespace attnlab::nmt {

MachinePlan divide_machine(std::int64_t cores, std::int64_t gpu_count, std::int64_t jobs, std::int64_t gpus_per_row,
                           std::int64_t threads_per_row) {
  ATTNLAB_CHECK(cores >= 1 && gpu_count >= 0 && jobs >= 1 && gpus_per_row >= 1 && threads_per_row >= 0,
                "divide_machine: cores {} >= 1, gpus {} >= 0, jobs {} >= 1, gpus per row {} >= 1 required", cores,
                gpu_count, jobs, gpus_per_row);
  MachinePlan plan;
  plan.cores = cores;
  plan.gpu_count = gpu_count;
  plan.gpus_per_row = gpus_per_row;
  // GPU groups of gpus_per_row consecutive GPUs; slot k takes group k modulo their number.
  const std::int64_t groups = gpu_count / gpus_per_row;
  plan.gpus_shared = gpu_count > 0 && (groups == 0 || jobs > groups);
  for (std::int64_t k = 0; k < jobs; ++k) {
    JobSlot slot;
    slot.threads = threads_per_row > 0 ? threads_per_row : std::max<std::int64_t>(1, cores / jobs + (k < cores % jobs));
    if (gpu_count > 0) {
      const std::int64_t first = groups > 0 ? (k % groups) * gpus_per_row : 0;
      for (std::int64_t g = 0; g < std::min(gpus_per_row, gpu_count); ++g)
        slot.gpus.push_back(static_cast<int>((first + g) % gpu_count));
    }
    plan.slots.push_back(std::move(slot));
  }
  return plan;
}

std::string MachinePlan::describe() const {
  const std::int64_t jobs = static_cast<std::int64_t>(slots.size());
  std::int64_t lo = slots.front().threads, hi = lo;
  for (const JobSlot& s : slots) lo = std::min(lo, s.threads), hi = std::max(hi, s.threads);
  std::string out = fmt::format("{} row(s) at once on {} core(s): {} thread(s) per row that leaves threads at 0", jobs,
                                cores, lo == hi ? std::to_string(lo) : fmt::format("{}-{}", lo, hi));
  if (gpu_count == 0) return out + "; no GPU";
  std::vector<std::string> per_slot;
  for (const JobSlot& s : slots) per_slot.push_back(fmt::format("{}", fmt::join(s.gpus, "+")));
  out += fmt::format("; {} GPU(s), {} per cuda row, by job slot: {}", gpu_count, gpus_per_row, fmt::join(per_slot, ", "));
  if (gpus_shared) out += " (more rows than GPUs: they share them round-robin)";
  return out;
}

RowResources row_resources(const ExperimentConfig& config, const JobSlot& slot) {
  RowResources r;
  r.threads = config.threads > 0 ? config.threads : slot.threads;
  r.device = config.device;
  const Device device = Device::parse(config.device);
  if (!device.is_cuda() || slot.gpus.empty()) return r;
  if (slot.gpus.size() == 1) {
    r.device = fmt::format("cuda:{}", slot.gpus.front());
    return r;
  }
  // CUDA_VISIBLE_DEVICES names GPUs as the parent sees them: through its own list when it has one.
  std::vector<std::string> visible;
  std::vector<std::string> parent;
  if (const char* env = std::getenv("CUDA_VISIBLE_DEVICES"); env && *env) {
    std::string list = env;
    for (std::size_t start = 0; start <= list.size();) {
      const std::size_t end = std::min(list.find(',', start), list.size());
      parent.push_back(list.substr(start, end - start));
      start = end + 1;
    }
  }
  for (int g : slot.gpus)
    visible.push_back(static_cast<std::size_t>(g) < parent.size() ? parent[static_cast<std::size_t>(g)]
                                                                   : std::to_string(g));
  r.device = "cuda:0";
  r.visible_gpus = fmt::format("{}", fmt::join(visible, ","));
  return r;
}

}  // namespace attnlab::nmt
