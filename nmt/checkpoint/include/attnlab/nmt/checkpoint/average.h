#pragma once
// Checkpoint averaging (paper, sec. 6.1: the last 5 checkpoints for base models, 20 for big).
#include <cstdint>
#include <filesystem>
#include <vector>

#include "attnlab/nmt/checkpoint/checkpoint.h"

namespace attnlab::nmt {

// The newest `n` valid checkpoints of a run folder, oldest first; fewer than n is an Error naming
// how many there are. With `until` > 0, the newest n of those at or before step `until` (what a
// run with max_steps = until would have averaged, the schedules but the cosine and linear ones not
// depending on max_steps).
std::vector<std::filesystem::path> last_checkpoints(const std::filesystem::path& run_dir, std::size_t n,
                                                    std::int64_t until = 0);

// The element-wise mean of the checkpoints' weights (accumulated in double). Every file must come
// from the same configuration and vocabulary with the same parameter names and shapes, else an
// Error names the file and the difference. The result keeps the newest checkpoint's step and
// metadata and carries no optimizer state.
Checkpoint average_checkpoints(const std::vector<std::filesystem::path>& files);

// Averages the run's newest `n` checkpoints (at or before step `until` when it is > 0) and saves
// the result to `out` (default RUN_DIR/checkpoints/average-last-N.safetensors, or
// average-last-N-until-STEP.safetensors, which the checkpoint store never mistakes for a training
// checkpoint). Returns the files averaged, oldest first.
std::vector<std::filesystem::path> average_last(const std::filesystem::path& run_dir, std::size_t n,
                                                const std::filesystem::path& out, std::int64_t until = 0);
std::filesystem::path average_last_path(const std::filesystem::path& run_dir, std::size_t n, std::int64_t until = 0);

}  // namespace attnlab::nmt
