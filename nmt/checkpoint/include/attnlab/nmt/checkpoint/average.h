#pragma once
// Checkpoint averaging (paper, sec. 6.1: the last 5 checkpoints for base models, 20 for big).
#include <filesystem>
#include <vector>

#include "attnlab/nmt/checkpoint/checkpoint.h"

namespace attnlab::nmt {

// The newest `n` valid checkpoints of a run folder, oldest first; fewer than n is an Error naming
// how many there are.
std::vector<std::filesystem::path> last_checkpoints(const std::filesystem::path& run_dir, std::size_t n);

// The element-wise mean of the checkpoints' weights (accumulated in double). Every file must come
// from the same configuration and vocabulary with the same parameter names and shapes, else an
// Error names the file and the difference. The result keeps the newest checkpoint's step and
// metadata and carries no optimizer state.
Checkpoint average_checkpoints(const std::vector<std::filesystem::path>& files);

// Averages the run's newest `n` checkpoints and saves the result to `out` (default
// RUN_DIR/checkpoints/average-last-N.safetensors, which the checkpoint store never mistakes for a
// training checkpoint). Returns the files averaged, oldest first.
std::vector<std::filesystem::path> average_last(const std::filesystem::path& run_dir, std::size_t n,
                                                const std::filesystem::path& out);
std::filesystem::path average_last_path(const std::filesystem::path& run_dir, std::size_t n);

}  // namespace attnlab::nmt
