#include "attnlab/nmt/checkpoint/checkpoint_store.h"

#include <algorithm>
#include <charconv>

#include "attnlab/nmt/io/atomic_file.h"

namespace attnlab::nmt {
namespace {

constexpr std::string_view kPrefix = "step-";
constexpr std::string_view kSuffix = ".safetensors";

// The step of a name "step-<digits>.safetensors", if it is one.
std::optional<std::int64_t> step_of(const std::string& name) {
  if (name.size() <= kPrefix.size() + kSuffix.size() || !name.starts_with(kPrefix) ||
      !name.ends_with(kSuffix))
    return std::nullopt;
  const std::string_view digits(name.data() + kPrefix.size(),
                                name.size() - kPrefix.size() - kSuffix.size());
  std::int64_t step = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), step);
  if (ec != std::errc() || ptr != digits.data() + digits.size() || digits.front() == '-' ||
      digits.front() == '+')
    return std::nullopt;
  return step;
}

}  // namespace

CheckpointStore::CheckpointStore(std::filesystem::path run_dir, int keep_last)
    : folder_(std::move(run_dir) / "checkpoints"), keep_last_(keep_last) {
  ATTNLAB_CHECK(keep_last >= 1, "CheckpointStore: keep_last must be at least 1, got {}",
                keep_last);
  std::error_code ec;
  std::filesystem::create_directories(folder_, ec);
  ATTNLAB_CHECK(!ec, "CheckpointStore: cannot create '{}': {}", folder_.string(), ec.message());
}

std::filesystem::path CheckpointStore::path_for(std::int64_t step) const {
  ATTNLAB_CHECK(step >= 0, "CheckpointStore: step {} is negative", step);
  return folder_ / fmt::format("step-{:08d}.safetensors", step);
}

std::vector<std::int64_t> checkpoint_steps(const std::filesystem::path& run_dir) {
  const std::filesystem::path folder = run_dir / "checkpoints";
  std::vector<std::int64_t> steps;
  if (!std::filesystem::exists(folder)) return steps;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(folder, ec)) {
    if (is_atomic_temp_file(entry.path()) || !entry.is_regular_file()) continue;
    if (auto step = step_of(entry.path().filename().string())) steps.push_back(*step);
  }
  ATTNLAB_CHECK(!ec, "CheckpointStore: cannot list '{}': {}", folder.string(), ec.message());
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  return steps;
}

std::vector<std::int64_t> CheckpointStore::list() const { return checkpoint_steps(folder_.parent_path()); }

std::filesystem::path CheckpointStore::save(std::int64_t step, const Checkpoint& checkpoint) {
  ATTNLAB_CHECK(checkpoint.step == step,
                "CheckpointStore::save: asked to save step {} but the checkpoint is of step {}",
                step, checkpoint.step);
  const std::filesystem::path path = path_for(step);
  save_checkpoint(path, checkpoint);  // durable once this returns (fsync of file and folder)

  // Keep the new file and the newest keep_last - 1 others.
  std::vector<std::int64_t> others = list();
  std::erase(others, step);
  const std::size_t keep_others = static_cast<std::size_t>(keep_last_ - 1);
  const std::size_t drop = others.size() > keep_others ? others.size() - keep_others : 0;
  for (std::size_t i = 0; i < drop; ++i) {
    std::error_code ec;
    std::filesystem::remove(path_for(others[i]), ec);  // best effort: a failure keeps a file
  }
  // Leftovers of interrupted writes (a store has one writer; ours has finished).
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(folder_, ec)) {
    const auto name = entry.path().filename().string();
    if (is_atomic_temp_file(entry.path()) && name.starts_with(".step-")) {
      std::error_code ignored;
      std::filesystem::remove(entry.path(), ignored);
    }
  }
  return path;
}

LatestCheckpoint CheckpointStore::latest() const {
  LatestCheckpoint out;
  const std::vector<std::int64_t> steps = list();
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    const std::filesystem::path path = path_for(*it);
    try {
      Checkpoint c = load_checkpoint(path);
      if (c.step != *it) {
        out.warnings.push_back(fmt::format(
            "skipping checkpoint '{}': it holds step {}, not the step {} of its name",
            path.string(), c.step, *it));
        continue;
      }
      out.checkpoint = std::move(c);
      out.path = path;
      return out;
    } catch (const Error& e) {
      out.warnings.push_back(fmt::format("skipping {}", e.what()));
    }
  }
  return out;
}

SavePolicy::SavePolicy(std::int64_t every_steps, double every_seconds, Clock::time_point start)
    : every_steps_(every_steps), every_seconds_(every_seconds), last_save_time_(start) {
  ATTNLAB_CHECK(every_steps >= 0 && every_seconds >= 0,
                "SavePolicy: every_steps ({}) and every_seconds ({}) must not be negative",
                every_steps, every_seconds);
}

bool SavePolicy::should_save(std::int64_t step, Clock::time_point now) const {
  if (last_saved_step_ && *last_saved_step_ == step) return false;
  if (every_steps_ > 0 && step % every_steps_ == 0) return true;
  if (every_seconds_ > 0) {
    const std::chrono::duration<double> elapsed = now - last_save_time_;
    if (elapsed.count() >= every_seconds_) return true;
  }
  return false;
}

void SavePolicy::mark_saved(std::int64_t step, Clock::time_point now) {
  last_saved_step_ = step;
  last_save_time_ = now;
}

}  // namespace attnlab::nmt
