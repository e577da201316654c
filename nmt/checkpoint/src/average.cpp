#include "attnlab/nmt/checkpoint/average.h"

#include <fmt/core.h>

#include "attnlab/error.h"
#include "attnlab/nmt/checkpoint/checkpoint_store.h"

namespace attnlab::nmt {

std::vector<std::filesystem::path> last_checkpoints(const std::filesystem::path& run_dir, std::size_t n,
                                                    std::int64_t until) {
  CheckpointStore store(run_dir, 1 << 30);
  auto steps = store.list();
  ATTNLAB_CHECK(n >= 1, "average: need at least one checkpoint");
  const std::string up_to = until > 0 ? fmt::format(" up to step {}", until) : "";
  if (until > 0) std::erase_if(steps, [until](std::int64_t step) { return step > until; });
  ATTNLAB_CHECK(steps.size() >= n, "average: {} holds {} checkpoint(s){}, {} requested (keep_checkpoints in the "
                "experiment decides how many are kept)", store.folder().string(), steps.size(), up_to, n);
  std::vector<std::filesystem::path> out;
  for (std::size_t i = steps.size() - n; i < steps.size(); ++i) out.push_back(store.path_for(steps[i]));
  return out;
}

Checkpoint average_checkpoints(const std::vector<std::filesystem::path>& files) {
  ATTNLAB_CHECK(!files.empty(), "average: no checkpoint given");
  const Checkpoint first = load_checkpoint(files[0]);
  std::vector<std::vector<double>> sums;
  for (const auto& p : first.parameters) sums.push_back(std::vector<double>(static_cast<std::size_t>(p.tensor.numel()), 0.0));
  Checkpoint result;
  for (std::size_t f = 0; f < files.size(); ++f) {
    Checkpoint ck = f == 0 ? first : load_checkpoint(files[f]);
    const std::string file = files[f].string(), reference = files[0].string();
    ATTNLAB_CHECK(ck.config == first.config, "average: {} was trained with another configuration than {}", file, reference);
    ATTNLAB_CHECK(ck.spm_model_hash == first.spm_model_hash, "average: {} uses another vocabulary than {}", file, reference);
    ATTNLAB_CHECK(ck.parameters.size() == first.parameters.size(), "average: {} has {} parameters, {} has {}", file,
                  ck.parameters.size(), reference, first.parameters.size());
    for (std::size_t i = 0; i < ck.parameters.size(); ++i) {
      const auto& a = ck.parameters[i];
      const auto& b = first.parameters[i];
      ATTNLAB_CHECK(a.name == b.name && a.tensor.shape() == b.tensor.shape(),
                    "average: parameter {} of {} is '{}' {} but '{}' {} in {}", i, file, a.name, a.tensor.shape().str(),
                    b.name, b.tensor.shape().str(), reference);
      const auto v = a.tensor.to_vector<double>();
      for (std::size_t k = 0; k < v.size(); ++k) sums[i][k] += v[k];
    }
    result = std::move(ck);  // the newest file's step and metadata
  }
  const double n = static_cast<double>(files.size());
  for (std::size_t i = 0; i < result.parameters.size(); ++i) {
    for (double& v : sums[i]) v /= n;
    auto& p = result.parameters[i];
    p.tensor = Tensor::from_vector<double>(p.tensor.shape(), sums[i]).to(p.tensor.dtype());
  }
  result.optimizer = {};
  result.rng.clear();
  return result;
}

std::filesystem::path average_last_path(const std::filesystem::path& run_dir, std::size_t n, std::int64_t until) {
  const std::string name = until > 0 ? fmt::format("average-last-{}-until-{}.safetensors", n, until)
                                     : fmt::format("average-last-{}.safetensors", n);
  return run_dir / "checkpoints" / name;
}

std::vector<std::filesystem::path> average_last(const std::filesystem::path& run_dir, std::size_t n,
                                                const std::filesystem::path& out, std::int64_t until) {
  auto files = last_checkpoints(run_dir, n, until);
  save_checkpoint(out, average_checkpoints(files));
  return files;
}

}  // namespace attnlab::nmt
