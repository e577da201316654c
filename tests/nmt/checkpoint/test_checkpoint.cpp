// Checkpoints: round trip, integrity checks, loading into modules, the run folder's store and the
// save policy.
#include <doctest/doctest.h>

#include <fstream>
#include <string>
#include <vector>

#include "attnlab/nmt/io/atomic_file.h"
#include "attnlab/nmt/checkpoint/checkpoint.h"
#include "attnlab/nmt/checkpoint/checkpoint_store.h"
#include "attnlab/nn/linear.h"
#include "nmt/checkpoint_test_util.h"

using namespace attnlab;
using namespace attnlab::nmt;
using namespace attnlab::nmt::testing;  // checkpoint_test_util.h

namespace {

// encoder.layers.0.self_attn.w_q.{weight,bias}, encoder.layers.0.norm.gain, embed.weight
class Attn : public Module {
 public:
  explicit Attn(Generator& g) { w_q = register_module("w_q", std::make_shared<nn::Linear>(4, 3, true, g)); }
  std::shared_ptr<nn::Linear> w_q;
};
class Layer : public Module {
 public:
  explicit Layer(Generator& g) {
    register_module("self_attn", std::make_shared<Attn>(g));
    register_parameter("norm.gain", Tensor::full({3}, 1.0));
  }
};
class Layers : public Module {
 public:
  explicit Layers(Generator& g) { register_module("0", std::make_shared<Layer>(g)); }
};
class Encoder : public Module {
 public:
  explicit Encoder(Generator& g) { register_module("layers", std::make_shared<Layers>(g)); }
};
class TinyModel : public Module {
 public:
  explicit TinyModel(std::uint64_t seed, std::int64_t vocab = 5) {
    Generator g(seed);
    register_module("encoder", std::make_shared<Encoder>(g));
    embed = register_parameter("embed.weight", Tensor::full({vocab, 3}, static_cast<double>(seed)));
  }
  Tensor embed;
};

// Every parameter's values, to compare a module before and after.
std::vector<std::vector<float>> values_of(const Module& m) {
  std::vector<std::vector<float>> out;
  for (const auto& [name, t] : m.named_parameters()) out.push_back(t.to_vector<float>());
  return out;
}

Checkpoint make_checkpoint(const Module& model, std::int64_t step) {
  Checkpoint c;
  c.step = step;
  c.parameters = snapshot_parameters(model);
  for (const auto& [name, t] : c.parameters) {
    c.optimizer.m.push_back({name, Tensor::full(t.shape(), 0.25 + static_cast<double>(step))});
    c.optimizer.v.push_back({name, Tensor::full(t.shape(), 0.5)});
  }
  c.optimizer.step = step;
  c.rng["dropout"] = {1234, 5678};
  c.rng["data.shuffle"] = {18446744073709551615ULL, 3};
  c.data = {2, 17};
  c.config = "[model]\nd_model = 512\n";
  c.plugins = R"([{"family":"attention","name":"scaled_dot","version":"1.0","build_id":"abc"}])";
  c.spm_model_hash = "xxh3-64:0123456789abcdef";
  return c;
}

// The message load_checkpoint throws for the file, or "" when it reads fine.
std::string load_error(const std::filesystem::path& path) {
  return error_of([&] { (void)load_checkpoint(path); });
}

}  // namespace

TEST_CASE("checkpoint round trip restores every field") {
  ScratchDir dir;
  TinyModel model(7);
  const Checkpoint c = make_checkpoint(model, 100);
  const auto path = dir / "c.safetensors";
  save_checkpoint(path, c);
  const Checkpoint got = load_checkpoint(path);
  CHECK(got.step == 100);
  REQUIRE(got.parameters.size() == 4);
  REQUIRE(got.parameter("encoder.layers.0.self_attn.w_q.weight") != nullptr);
  // [out, in] like torch.nn.Linear
  CHECK(got.parameter("encoder.layers.0.self_attn.w_q.weight")->shape() == Shape{3, 4});
  CHECK(got.parameter("encoder.layers.0.self_attn.w_q.bias")->shape() == Shape{3});
  for (std::size_t i = 0; i < c.parameters.size(); ++i) {
    CHECK(got.parameters[i].name == c.parameters[i].name);
    CHECK(got.parameters[i].tensor.to_vector<float>() == c.parameters[i].tensor.to_vector<float>());
    CHECK(got.optimizer.m[i].name == c.parameters[i].name);
    CHECK(got.optimizer.m[i].tensor.to_vector<float>() == c.optimizer.m[i].tensor.to_vector<float>());
    CHECK(got.optimizer.v[i].tensor.to_vector<float>() == c.optimizer.v[i].tensor.to_vector<float>());
  }
  CHECK(got.optimizer.step == 100);
  CHECK(got.rng == c.rng);
  CHECK(got.data == DataPosition{2, 17});
  CHECK(got.config == c.config);
  CHECK(got.config_format == "toml");
  CHECK(got.plugins == c.plugins);
  CHECK(got.spm_model_hash == c.spm_model_hash);
  CHECK(got.attnlab_version == ATTNLAB_VERSION_STRING);
  REQUIRE(got.parameter("embed.weight") != nullptr);
  CHECK(got.parameter("embed.weight")->to_vector<float>() == std::vector<float>(15, 7.f));

  Generator g(1);
  (void)g.reserve(40);
  GeneratorState::of(g).restore(g);
  Generator h(99);
  got.rng.at("dropout").restore(h);
  CHECK(h.seed() == 1234);
  CHECK(h.offset() == 5678);
}

TEST_CASE("checkpoint weights are stored under the plain parameter names") {
  ScratchDir dir;
  TinyModel model(1);
  save_checkpoint(dir / "c.safetensors", make_checkpoint(model, 3));
  const auto raw = read_safetensors(dir / "c.safetensors");
  CHECK(raw.find("encoder.layers.0.self_attn.w_q.weight") != nullptr);
  CHECK(raw.find("optim.m.embed.weight") != nullptr);
  CHECK(raw.find("optim.v.encoder.layers.0.norm.gain") != nullptr);
  CHECK(raw.metadata.at("format") == "pt");
  CHECK(raw.metadata.at("attnlab.format") == kCheckpointFormat);
  CHECK(raw.metadata.at("attnlab.checksum").starts_with("xxh3-64:"));
  CHECK(raw.metadata.at("attnlab.step") == "3");
  CHECK(raw.metadata.at("attnlab.data_position") == R"({"epoch":2,"batch_index":17})");
}

TEST_CASE("checkpoint without optimizer state is valid") {
  ScratchDir dir;
  TinyModel model(2);
  Checkpoint c;
  c.step = 5;
  c.parameters = snapshot_parameters(model);
  c.config = R"({"model": {"d_model": 8}})";
  c.config_format = "json";
  save_checkpoint(dir / "c.safetensors", c);
  const Checkpoint got = load_checkpoint(dir / "c.safetensors");
  CHECK(got.optimizer.m.empty());
  CHECK(got.optimizer.v.empty());
  CHECK(got.config_format == "json");
}

TEST_CASE("save_checkpoint refuses inconsistent checkpoints") {
  ScratchDir dir;
  TinyModel model(2);
  const auto path = dir / "c.safetensors";
  Checkpoint c = make_checkpoint(model, 1);
  std::erase_if(c.optimizer.v, [](const NamedTensor& t) { return t.name == "embed.weight"; });
  CHECK_THROWS_WITH_AS(save_checkpoint(path, c),
                       doctest::Contains("parameter 'embed.weight' has no Adam second moment"), Error);
  c = make_checkpoint(model, 1);
  for (auto& m : c.optimizer.m)
    if (m.name == "encoder.layers.0.self_attn.w_q.weight") m.tensor = Tensor::zeros({4, 3});
  CHECK_THROWS_WITH_AS(save_checkpoint(path, c), doctest::Contains("has shape [4, 3] but the parameter has shape [3, 4]"),
                       Error);
  c = make_checkpoint(model, 1);
  c.parameters.push_back({"optim.sneaky", Tensor::zeros({1})});
  CHECK_THROWS_WITH_AS(save_checkpoint(path, c), doctest::Contains("reserved prefix"), Error);
  c = make_checkpoint(model, 1);
  c.plugins = "{not json";
  CHECK_THROWS_WITH_AS(save_checkpoint(path, c), doctest::Contains("plugins string is not valid JSON"), Error);
  CHECK_FALSE(std::filesystem::exists(path));
}

TEST_CASE("checkpoint with a flipped data byte is refused by its checksum") {
  ScratchDir dir;
  TinyModel model(3);
  const auto path = dir / "c.safetensors";
  save_checkpoint(path, make_checkpoint(model, 10));
  auto bytes = read_bytes(path);
  bytes[bytes.size() - 5] ^= 0x01;  // inside the last tensor's data
  write_bytes(path, bytes);
  const std::string error = load_error(path);
  CHECK(contains(error, "checkpoint '" + path.string() + "' is corrupt: checksum"));
  CHECK(contains(error, "expected xxh3-64:"));
}

TEST_CASE("truncated checkpoint is refused") {
  ScratchDir dir;
  TinyModel model(3);
  const auto path = dir / "c.safetensors";
  save_checkpoint(path, make_checkpoint(model, 10));
  auto bytes = read_bytes(path);
  bytes.resize(bytes.size() / 2);
  write_bytes(path, bytes);
  const std::string error = load_error(path);
  CHECK(contains(error, "checkpoint '" + path.string() + "' is truncated"));
}

TEST_CASE("safetensors file without attnlab metadata is not a checkpoint") {
  ScratchDir dir;
  write_safetensors(dir / "plain.safetensors", {{"w", Tensor::zeros({2})}}, {{"format", "pt"}});
  CHECK(contains(load_error(dir / "plain.safetensors"),
                 "is not an attnlab checkpoint: metadata key 'attnlab.format' is missing"));
}

TEST_CASE("apply_to_module copies the weights") {
  ScratchDir dir;
  TinyModel source(11);
  save_checkpoint(dir / "c.safetensors", make_checkpoint(source, 1));
  TinyModel target(22);
  const Tensor embed_handle = target.embed;  // a handle held elsewhere sees the new values
  CHECK(values_of(target) != values_of(source));
  apply_to_module(load_checkpoint(dir / "c.safetensors"), target);
  CHECK(values_of(target) == values_of(source));
  CHECK(embed_handle.to_vector<float>() == std::vector<float>(15, 11.f));
  CHECK(embed_handle.requires_grad());
}

// apply_to_module(c, target) must throw `message` and leave every weight of target as it was.
void refused_unchanged(const Checkpoint& c, TinyModel& target, const std::string& message) {
  const auto before = values_of(target);
  CHECK_THROWS_WITH_AS(apply_to_module(c, target), doctest::Contains(message.c_str()), Error);
  CHECK(values_of(target) == before);
}

TEST_CASE("apply_to_module refuses a missing parameter, an extra weight and a shape mismatch, changing nothing") {
  TinyModel source(11);
  TinyModel target(22);
  Checkpoint missing = make_checkpoint(source, 1);
  std::erase_if(missing.parameters,
                [](const NamedTensor& t) { return t.name == "encoder.layers.0.self_attn.w_q.bias"; });
  refused_unchanged(missing, target,
                    "parameter 'encoder.layers.0.self_attn.w_q.bias' (shape [3]) is missing from the checkpoint");
  Checkpoint extra = make_checkpoint(source, 1);
  extra.parameters.push_back({"decoder.extra.weight", Tensor::zeros({2, 2})});
  refused_unchanged(extra, target,
                    "checkpoint weight 'decoder.extra.weight' (shape [2, 2]) is not a parameter of the module");
  TinyModel wide(11, /*vocab=*/6);
  TinyModel narrow(22, /*vocab=*/5);
  refused_unchanged(make_checkpoint(wide, 1), narrow,
                    "parameter 'embed.weight' has shape [6, 3] in the checkpoint but [5, 3] in the module");
}

TEST_CASE("checkpoint store names files by step and keeps the last K") {
  ScratchDir dir;
  CheckpointStore store(dir.path(), 2);
  CHECK(store.path_for(100) == dir.path() / "checkpoints" / "step-00000100.safetensors");
  CHECK(store.list().empty());
  CHECK_FALSE(store.latest());
  TinyModel model(1);
  for (std::int64_t step : {100, 200, 300, 400}) store.save(step, make_checkpoint(model, step));
  CHECK(store.list() == std::vector<std::int64_t>{300, 400});
  CHECK(std::filesystem::exists(dir.path() / "checkpoints" / "step-00000400.safetensors"));
  const LatestCheckpoint latest = store.latest();
  REQUIRE(latest);
  CHECK(latest.checkpoint->step == 400);
  CHECK(latest.path == store.path_for(400));
  CHECK(latest.warnings.empty());
  CHECK_THROWS_WITH_AS(store.save(500, make_checkpoint(model, 499)),
                       doctest::Contains("asked to save step 500 but the checkpoint is of step 499"), Error);
  CHECK_THROWS_AS(CheckpointStore(dir.path(), 0), Error);
}

TEST_CASE("checkpoint store always keeps the checkpoint it just saved") {
  ScratchDir dir;
  CheckpointStore store(dir.path(), 2);
  TinyModel model(1);
  for (std::int64_t step : {300, 400, 100}) store.save(step, make_checkpoint(model, step));
  CHECK(store.list() == std::vector<std::int64_t>{100, 400});
}

TEST_CASE("checkpoint store falls back past a corrupt newest file") {
  ScratchDir dir;
  CheckpointStore store(dir.path(), 3);
  TinyModel model(1);
  for (std::int64_t step : {100, 200, 300}) store.save(step, make_checkpoint(model, step));
  auto bytes = read_bytes(store.path_for(300));
  bytes[bytes.size() - 1] ^= 0x80;
  write_bytes(store.path_for(300), bytes);
  bytes = read_bytes(store.path_for(200));
  bytes.resize(bytes.size() - 10);
  write_bytes(store.path_for(200), bytes);

  const LatestCheckpoint latest = store.latest();
  REQUIRE(latest);
  CHECK(latest.checkpoint->step == 100);
  REQUIRE(latest.warnings.size() == 2);
  CHECK(contains(latest.warnings[0], "step-00000300.safetensors' is corrupt: checksum"));
  CHECK(contains(latest.warnings[1], "step-00000200.safetensors' is truncated"));
}

TEST_CASE("checkpoint store skips a file whose content is of another step") {
  ScratchDir dir;
  CheckpointStore store(dir.path(), 3);
  TinyModel model(1);
  store.save(100, make_checkpoint(model, 100));
  save_checkpoint(store.path_for(200), make_checkpoint(model, 150));
  const LatestCheckpoint latest = store.latest();
  REQUIRE(latest);
  CHECK(latest.checkpoint->step == 100);
  REQUIRE(latest.warnings.size() == 1);
  CHECK(contains(latest.warnings[0], "holds step 150"));
}

TEST_CASE("checkpoint store ignores the temporary file of an interrupted write") {
  ScratchDir dir;
  CheckpointStore store(dir.path(), 2);
  TinyModel model(1);
  store.save(100, make_checkpoint(model, 100));
  // A crash during the write of step 200 leaves a partial temporary file and no step-200 file.
  const auto leftover = atomic_temp_path(store.path_for(200));
  {
    std::ofstream out(leftover, std::ios::binary);
    out << "partial";
  }
  CHECK(store.list() == std::vector<std::int64_t>{100});
  const LatestCheckpoint latest = store.latest();
  REQUIRE(latest);
  CHECK(latest.checkpoint->step == 100);
  CHECK(latest.warnings.empty());
  // The next save cleans it up.
  store.save(200, make_checkpoint(model, 200));
  CHECK_FALSE(std::filesystem::exists(leftover));
  CHECK(store.list() == std::vector<std::int64_t>{100, 200});
}

TEST_CASE("save policy saves every N steps and every T seconds") {
  using Clock = SavePolicy::Clock;
  const Clock::time_point t0{};
  SavePolicy by_steps(100, 0, t0);
  CHECK_FALSE(by_steps.should_save(99, t0 + std::chrono::hours(5)));
  CHECK(by_steps.should_save(100, t0));
  by_steps.mark_saved(100, t0);
  CHECK_FALSE(by_steps.should_save(100, t0));  // never twice for one step
  CHECK(by_steps.should_save(200, t0));

  SavePolicy by_time(0, 60.0, t0);
  CHECK_FALSE(by_time.should_save(1, t0 + std::chrono::seconds(59)));
  CHECK(by_time.should_save(2, t0 + std::chrono::seconds(60)));
  by_time.mark_saved(2, t0 + std::chrono::seconds(60));
  CHECK_FALSE(by_time.should_save(3, t0 + std::chrono::seconds(100)));
  CHECK(by_time.should_save(4, t0 + std::chrono::seconds(121)));

  SavePolicy both(1000, 30.0, t0);
  CHECK(both.should_save(1000, t0));
  CHECK(both.should_save(7, t0 + std::chrono::seconds(31)));
  CHECK_FALSE(both.should_save(7, t0 + std::chrono::seconds(29)));

  SavePolicy never(0, 0, t0);
  CHECK_FALSE(never.should_save(1000, t0 + std::chrono::hours(100)));
  CHECK_THROWS_AS(SavePolicy(-1, 0, t0), Error);
}
