#pragma once
// How `attnlab run --jobs N` divides one machine among the rows it trains at once: each job slot
// gets its share of the CPU cores (for rows that leave experiment.threads at 0) and, on a node
// with GPUs, its own GPU(s) for rows on cuda (shared round-robin when slots outnumber them).
#include <cstdint>
#include <string>
#include <vector>

#include "attnlab/nmt/experiment/experiment.h"

namespace attnlab::nmt {

struct JobSlot {
  std::int64_t threads = 1;  // CPU threads of a row in this slot that leaves threads at 0
  std::vector<int> gpus;     // the GPUs of a cuda row in this slot (empty: no GPU on the node)
};

struct MachinePlan {
  std::int64_t cores = 1;         // CPUs this process may use
  std::int64_t gpu_count = 0;     // GPUs visible to this process
  std::int64_t gpus_per_row = 1;
  std::vector<JobSlot> slots;     // one per job
  bool gpus_shared = false;       // more slots than GPU groups: a GPU serves several rows

  // One line for the log and for `attnlab check`.
  std::string describe() const;
};

// cores and gpu_count: what the machine offers; jobs >= 1 slots; gpus_per_row >= 1;
// threads_per_row > 0 replaces the share of the cores (cores / jobs, the remainder to the first
// slots, at least 1).
MachinePlan divide_machine(std::int64_t cores, std::int64_t gpu_count, std::int64_t jobs, std::int64_t gpus_per_row,
                           std::int64_t threads_per_row = 0);

// What a row trained in a slot runs with. threads: the row's own when it sets them, else the
// slot's; device: the row's own for cpu rows, "cuda:K" for a cuda row given one GPU, "cuda:0"
// with visible_gpus = "K,L" (CUDA_VISIBLE_DEVICES) for a row given several.
struct RowResources {
  std::int64_t threads = 1;
  std::string device;
  std::string visible_gpus;
};
RowResources row_resources(const ExperimentConfig& config, const JobSlot& slot);

}  // namespace attnlab::nmt
