#include <doctest/doctest.h>

#include <filesystem>
#include <unistd.h>

#include "attnlab/nmt/checkpoint/average.h"
#include "attnlab/nmt/checkpoint/checkpoint_store.h"

using namespace attnlab;
using namespace attnlab::nmt;
namespace fs = std::filesystem;

namespace {

Checkpoint make(std::int64_t step, double value, const std::string& config = "[model]\nd_model = 4\n") {
  Checkpoint ck;
  ck.step = step;
  ck.parameters = {{"w", Tensor::full({2, 3}, value)}, {"b", Tensor::full({3}, -value)}};
  ck.config = config;
  ck.spm_model_hash = "abc";
  return ck;
}

}  // namespace

TEST_CASE("averaging the last checkpoints gives the element-wise mean") {
  const fs::path run = fs::temp_directory_path() / fmt::format("attnlab-average-{}", ::getpid());
  fs::remove_all(run);
  CheckpointStore store(run, 10);
  for (int i = 1; i <= 4; ++i) store.save(i * 100, make(i * 100, i));
  const auto files = last_checkpoints(run, 3);
  REQUIRE(files.size() == 3);
  CHECK(files.front().filename() == "step-00000200.safetensors");
  const Checkpoint avg = average_checkpoints(files);
  CHECK(avg.step == 400);
  CHECK(avg.parameters[0].tensor.to_vector<double>() == std::vector<double>(6, 3.0));
  CHECK(avg.parameters[1].tensor.to_vector<double>() == std::vector<double>(3, -3.0));
  CHECK(avg.optimizer.m.empty());
  CHECK_THROWS_WITH_AS(last_checkpoints(run, 5), doctest::Contains("holds 4 checkpoint(s), 5 requested"), Error);
  store.save(500, make(500, 5, "[model]\nd_model = 8\n"));
  CHECK_THROWS_WITH_AS(average_checkpoints(last_checkpoints(run, 2)),
                       doctest::Contains("was trained with another configuration"), Error);
  fs::remove_all(run);
}

TEST_CASE("averaging up to a step takes the last checkpoints at or before it, as a run of that length would") {
  const fs::path run = fs::temp_directory_path() / fmt::format("attnlab-average-until-{}", ::getpid());
  fs::remove_all(run);
  CheckpointStore store(run, 10);
  for (int i = 1; i <= 6; ++i) store.save(i * 100, make(i * 100, i));
  // Up to step 450: the checkpoints of steps 200, 300 and 400 (a 450-step run's last three).
  const auto files = last_checkpoints(run, 3, 450);
  REQUIRE(files.size() == 3);
  CHECK(files.front().filename() == "step-00000200.safetensors");
  CHECK(files.back().filename() == "step-00000400.safetensors");
  const fs::path out = average_last_path(run, 3, 450);
  CHECK(out.filename() == "average-last-3-until-450.safetensors");
  CHECK(average_last_path(run, 3).filename() == "average-last-3.safetensors");
  average_last(run, 3, out, 450);
  const Checkpoint avg = load_checkpoint(out);
  CHECK(avg.step == 400);
  CHECK(avg.parameters[0].tensor.to_vector<double>() == std::vector<double>(6, 3.0));
  // An exact step is included; 0 means no limit.
  CHECK(last_checkpoints(run, 1, 300).front().filename() == "step-00000300.safetensors");
  CHECK(last_checkpoints(run, 1, 0).front().filename() == "step-00000600.safetensors");
  // The averaged file is not a training checkpoint: the newest step is still 600.
  CHECK(store.list().back() == 600);
  CHECK_THROWS_WITH_AS(last_checkpoints(run, 3, 250), doctest::Contains("holds 2 checkpoint(s) up to step 250, 3 requested"),
                       Error);
  fs::remove_all(run);
}
