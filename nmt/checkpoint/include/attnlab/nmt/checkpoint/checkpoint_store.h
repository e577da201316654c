#pragma once
// A run folder's checkpoints: <run_dir>/checkpoints/step-00000100.safetensors, ..., the last K
// kept, and the policy deciding when the trainer saves.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "attnlab/nmt/checkpoint/checkpoint.h"

namespace attnlab::nmt {

// What latest() found: the newest checkpoint that loads and validates, and a warning for every
// newer file that was skipped (corrupt, truncated, wrong step). `checkpoint` is empty when no
// valid checkpoint exists.
struct LatestCheckpoint {
  std::optional<Checkpoint> checkpoint;
  std::filesystem::path path;
  std::vector<std::string> warnings;
  explicit operator bool() const { return checkpoint.has_value(); }
};

// Steps of the checkpoint files in <run_dir>/checkpoints, ascending (temporary files and other
// names ignored; validity not checked; empty when the folder does not exist). Reads names only:
// for readers that must not create or change anything (`attnlab status`).
std::vector<std::int64_t> checkpoint_steps(const std::filesystem::path& run_dir);

class CheckpointStore {
 public:
  // Creates <run_dir>/checkpoints if needed. keep_last >= 1.
  CheckpointStore(std::filesystem::path run_dir, int keep_last);

  const std::filesystem::path& folder() const { return folder_; }
  int keep_last() const { return keep_last_; }
  // <folder>/step-<step, 8 digits or more>.safetensors
  std::filesystem::path path_for(std::int64_t step) const;

  // Writes the checkpoint atomically (checkpoint.step must equal step), then, only once it is
  // durable, deletes the oldest files so that K remain (the new one always among them) and
  // removes temporary files left by interrupted writes. Returns the new file's path.
  std::filesystem::path save(std::int64_t step, const Checkpoint& checkpoint);

  // Steps of the checkpoint files present, ascending (temporary files and other names ignored;
  // validity is not checked).
  std::vector<std::int64_t> list() const;

  // The newest checkpoint that loads with full validation, falling back past corrupt files (a
  // corrupt file is never returned); see LatestCheckpoint.
  LatestCheckpoint latest() const;

 private:
  std::filesystem::path folder_;
  int keep_last_;
};

// When to save: every `every_steps` steps and/or every `every_seconds` seconds since the last
// save (0 disables a criterion). The clock is passed in, so the decision is testable.
class SavePolicy {
 public:
  using Clock = std::chrono::steady_clock;
  SavePolicy(std::int64_t every_steps, double every_seconds,
             Clock::time_point start = Clock::now());
  // True when `step` (just completed) should be saved at time `now`.
  bool should_save(std::int64_t step, Clock::time_point now = Clock::now()) const;
  // Records a save, restarting the time interval.
  void mark_saved(std::int64_t step, Clock::time_point now = Clock::now());

 private:
  std::int64_t every_steps_;
  double every_seconds_;
  Clock::time_point last_save_time_;
  std::optional<std::int64_t> last_saved_step_;
};

}  // namespace attnlab::nmt
