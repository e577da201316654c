// What an attention plugin serves, checked per experiment row before training: a row the plugin
// cannot serve is refused with its place, the plugin, what is missing and what is supported, or
// runs with the `fallback` named in [model.attention].
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>

#include "attnlab/error.h"
#include "attnlab/nmt/train/trainer.h"
#include "attnlab/nmt/experiment/experiment.h"
#include "attnlab/plugin/attention_support.h"
#include "nmt_testing.h"

using namespace attnlab;
using namespace attnlab::nmt;

namespace {

// A one-head model of d_k = d_v = 512 (Table 3 row A1) on cuda:0 with the flash attention.
std::string row_a1(const std::string& attention_table) {
  return R"([experiment]
name = "a1"
device = "cuda:0"

[data.synthetic]
train_pairs = 100

[vocab]
size = 300

[model]
d_model = 512
heads = 1

)" + attention_table;
}

doctest::Contains contains(const std::string& text) { return doctest::Contains(text.c_str()); }

// The in-tree plugins plus "narrow": scaled_dot's layers, declared for head size 4 only on the CPU.
const Registry& with_narrow() {
  static Registry registry;
  static const bool loaded = [] {
    PluginLoader loader(registry);
    loader.add_search_path(ATTNLAB_TEST_PLUGIN_DIR);
    loader.load_all();
    PluginInfo info = registry.find(PluginFamily::attention, "scaled_dot");
    info.name = "narrow";
    info.capabilities.devices = {{.device = DeviceKind::cpu, .dtypes = {DType::f32, DType::f64}, .head_dims = {4}}};
    registry.add_attention(info, [](const BuildContext& ctx) { return registry.make_attention("scaled_dot", ctx); });
    return true;
  }();
  (void)loaded;
  return registry;
}

}  // namespace

TEST_CASE("a row the attention plugin cannot serve is refused at check time naming the fallback key") {
  const ExperimentConfig c = parse_experiment(row_a1("[model.attention]\nname = \"flash\"\n"), "a1.toml");
  CHECK_THROWS_WITH_AS(
      validate_plugins(c, nmt::testing::plugins()),
      contains("a1.toml:15:1: model.attention: attention plugin 'flash' does not support head size d_k = 512, head "
               "size d_v = 512 on cuda (it supports on cuda: f32, bf16; head sizes 16, 32, 64, 128; padding mask, "
               "causal, incremental, attention dropout, score expressions; positions: rotation, score terms, value terms (kernel "
               "form)); set fallback = \"scaled_dot\" (or another attention plugin) in [model.attention]"),
      Error);
  // The same model on the CPU, or with 8 heads of 64 on cuda, is served.
  ExperimentConfig cpu = c;
  cpu.device = "cpu";
  CHECK(validate_plugins(cpu, nmt::testing::plugins()).empty());
  const ExperimentConfig base = parse_experiment(
      row_a1("[model.attention]\nname = \"flash\"\n").replace(row_a1("").find("heads = 1"), 9, "heads = 8"), "b.toml");
  CHECK(base.model.dims.d_k == 64);
  CHECK(validate_plugins(base, nmt::testing::plugins()).empty());
}

TEST_CASE("the fallback serves the rows the attention plugin cannot and says so") {
  const ExperimentConfig c = parse_experiment(
      row_a1("[model.attention]\nname = \"flash\"\nfallback = \"scaled_dot\"\nbias = false\n"), "a1.toml");
  CHECK(c.model.attention.fallback == "scaled_dot");
  const auto notices = validate_plugins(c, nmt::testing::plugins());
  REQUIRE(notices.size() == 1);
  CHECK(notices[0] == "a1.toml:15:1: model.attention: attention plugin 'flash' does not support head size d_k = "
                      "512, head size d_v = 512 on cuda (it supports on cuda: f32, bf16; head sizes 16, 32, 64, 128; "
                      "padding mask, causal, incremental, attention dropout, score expressions; positions: rotation, score "
                      "terms, value "
                      "terms (kernel form)): using its fallback 'scaled_dot'");
  const AttentionResolution r = resolve_attention(c.model, nmt::testing::plugins(), Device::cuda(0), DType::f32);
  CHECK(r.choice.name == "scaled_dot");
  CHECK(std::get<bool>(r.choice.options.at("bias")) == false);  // the options the fallback declares go along
  CHECK(resolve_attention(c.model, nmt::testing::plugins(), Device::cpu(), DType::f32).choice.name == "flash");
  // The fallback is part of the run's identity, and reads back.
  const std::string text = to_toml(c);
  CHECK(text.find("fallback = 'scaled_dot'") != std::string::npos);
  CHECK(parse_experiment(text, "resolved.toml").model.attention.fallback == "scaled_dot");
}

TEST_CASE("a fallback equal to the plugin leaves the run identity unchanged") {
  const std::string plain = row_a1("[model.attention]\nname = \"scaled_dot\"\n");
  const std::string same = row_a1("[model.attention]\nname = \"scaled_dot\"\nfallback = \"scaled_dot\"\n");
  CHECK(to_toml(parse_experiment(plain, "p.toml")) == to_toml(parse_experiment(same, "s.toml")));
}

TEST_CASE("an unknown fallback is named where it is written") {
  const ExperimentConfig c =
      parse_experiment(row_a1("[model.attention]\nname = \"flash\"\nfallback = \"scaled_dog\"\n"), "f.toml");
  CHECK_THROWS_WITH_AS(validate_plugins(c, nmt::testing::plugins()),
                       contains("f.toml:17:12: model.attention.fallback: unknown attention plugin 'scaled_dog' "
                                "(valid: "),
                       Error);
  CHECK_THROWS_WITH_AS(validate_plugins(c, nmt::testing::plugins()), contains("; did you mean 'scaled_dot'?"), Error);
  try {  // the names only: which file each plugin came from is attnlab plugins' to say
    validate_plugins(c, nmt::testing::plugins());
    FAIL("an unknown fallback was accepted");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find(".so") == std::string::npos);
  }
  // `fallback` belongs to [model.attention] only.
  const ExperimentConfig ffn = parse_experiment(
      row_a1("[model.attention]\nname = \"scaled_dot\"\n[model.ffn]\nname = \"relu\"\nfallback = \"gelu\"\n"), "g.toml");
  CHECK_THROWS_WITH_AS(validate_plugins(ffn, nmt::testing::plugins()),
                       contains("g.toml:19:1: model.ffn.fallback: unknown key for ffn plugin 'relu'"), Error);
}

TEST_CASE("the transformer builds its attention layers with the fallback") {
  const Registry& registry = with_narrow();
  TransformerConfig c = nmt::testing::tiny_config();  // d_k 3, d_v 5
  c.attention = {"narrow", {}, "scaled_dot"};
  Generator init(1), drop(2);
  Transformer model(c, registry, init, drop);
  CHECK(model.attention().choice.name == "scaled_dot");
  CHECK(model.attention().notice.find("attention plugin 'narrow' does not support head size d_k = 3, head size "
                                      "d_v = 5 on cpu (it supports on cpu: f32, f64; head sizes 4;") == 0);
  CHECK(model.forward(Tensor::from_vector<std::int64_t>({1, 3}, {1, 2, 3}),
                      Tensor::from_vector<std::int64_t>({1, 2}, {1, 4}))
            .shape() == Shape({1, 2, 11}));
  // Without a fallback the model is not built; with d_k = d_v = 4 narrow serves it.
  c.attention.fallback.clear();
  CHECK_THROWS_WITH_AS(Transformer(c, registry, init, drop),
                       contains("attention plugin 'narrow' does not support head size d_k = 3"), Error);
  c.dims.d_k = c.dims.d_v = 4;
  CHECK(Transformer(c, registry, init, drop).attention().choice.name == "narrow");
}

TEST_CASE("a compute dtype neither the plugin nor its fallback serves names both") {
  TransformerConfig c = nmt::testing::tiny_config();
  c.attention = {"flash", {}, "scaled_dot"};
  CHECK_THROWS_WITH_AS(resolve_attention(c, nmt::testing::plugins(), Device::cpu(), DType::bf16),
                       contains("attention plugin 'flash' does not support dtype bf16 on cpu (it supports on cpu: f32, "
                                "f64; head sizes any; padding mask, causal, incremental, attention dropout, score "
                                "expressions; positions: rotation, score terms, value terms (kernel form)), and neither "
                                "does its fallback: "
                                "attention plugin 'scaled_dot' does not support dtype bf16 on cpu"),
                       Error);
  // check_attention_support is the one function every caller asks.
  const PluginInfo& flash = nmt::testing::plugins().find(PluginFamily::attention, "flash");
  CHECK_FALSE(check_attention_support(flash, Device::cuda(0), DType::bf16, 64, 128));
  CHECK(check_attention_support(flash, Device::cuda(0), DType::f64, 64, 64).value() ==
        "attention plugin 'flash' does not support dtype f64 on cuda (it supports on cuda: f32, bf16; head sizes 16, "
        "32, 64, 128; padding mask, causal, incremental, attention dropout, score expressions; positions: rotation, "
              "score terms, value "
        "terms (kernel form))");
}

TEST_CASE("training prints one line when the fallback serves the model") {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / fmt::format("attnlab-fallback-{}", ::getpid());
  fs::remove_all(root);
  ExperimentConfig c = parse_experiment(R"([experiment]
name = "narrow"
[data]
cache_dir = "cache"
[data.synthetic]
train_pairs = 100
dev_pairs = 5
test_pairs = 5
[vocab]
size = 100
)" + std::string(nmt::testing::kTinyModelTable) + R"([model.attention]
name = "narrow"
fallback = "scaled_dot"
[training]
batch_tokens = 200
max_steps = 1
eval_every = 1
)",
                                        (root / "narrow.toml").string());
  c.run_dir = (root / "run").string();
  std::vector<std::string> lines;
  TrainOptions options;
  options.progress = false;
  options.log = [&](const std::string& line) { lines.push_back(line); };
  train(c, with_narrow(), options);
  std::size_t notes = 0;
  for (const auto& line : lines)
    if (line.starts_with("note: ")) {
      ++notes;
      CHECK(line.find("narrow.toml:17:1: model.attention: attention plugin 'narrow' does not support head size "
                      "d_k = 8, head size d_v = 8 on cpu") != std::string::npos);
      CHECK(line.ends_with("using its fallback 'scaled_dot'"));
    }
  CHECK(notes == 1);
  fs::remove_all(root);
}
