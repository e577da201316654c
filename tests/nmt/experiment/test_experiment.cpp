#include <doctest/doctest.h>

#include "attnlab/error.h"
#include "attnlab/nmt/experiment/experiment.h"
#include "attnlab/nmt/experiment/toml_edit.h"
#include "checkpoint_test_util.h"
#include "nmt_testing.h"

using namespace attnlab;
using namespace attnlab::nmt;

namespace {

const char* kMinimal = R"([experiment]
name = "tiny"
seed = 7

[data.synthetic]
train_pairs = 100

[vocab]
size = 300

[model]
d_model = 64
heads = 4

[model.attention]
name = "scaled_dot"
bias = false

[training]
max_steps = 20
)";

doctest::Contains contains(const std::string& text) { return doctest::Contains(text.c_str()); }

}  // namespace

TEST_CASE("an experiment file is read with defaults and derived head sizes") {
  ExperimentConfig c = parse_experiment(kMinimal, "exp/tiny.toml");
  CHECK(c.name == "tiny");
  CHECK(c.seed == 7);
  CHECK(c.data.synthetic);
  CHECK(c.data.synth.train_pairs == 100);
  CHECK(c.model.vocab_size == 300);
  CHECK(c.model.dims.d_k == 16);
  CHECK(c.model.dims.d_v == 16);
  CHECK(c.model.dims.d_ff == 2048);
  CHECK(c.model.attention.name == "scaled_dot");
  CHECK(std::get<bool>(c.model.attention.options.at("bias")) == false);
  CHECK(c.training.max_steps == 20);
  CHECK(c.training.warmup_steps == 4000);
  CHECK(c.training.label_smoothing == doctest::Approx(0.1));
  CHECK(c.run_dir == "runs/tiny");
}

TEST_CASE("the resolved TOML reads back to the same configuration") {
  ExperimentConfig a = parse_experiment(kMinimal, "tiny.toml");
  ExperimentConfig b = parse_experiment(to_toml(a), "resolved.toml");
  CHECK(to_toml(a) == to_toml(b));
  CHECK(b.model.dims.d_k == 16);
  CHECK(b.data.synth.train_pairs == 100);
}

TEST_CASE("experiment mistakes name file line column and key") {
  CHECK_THROWS_WITH_AS(parse_experiment("[training]\nmax_steps = = 3\n", "bad.toml"),
                       doctest::Contains("bad.toml:2:13: TOML syntax error"), Error);
  CHECK_THROWS_WITH_AS(parse_experiment(std::string(kMinimal) + "max_step = 3\n", "t.toml"),
                       doctest::Contains("t.toml:21:1: training.max_step: unknown key (valid keys here: "), Error);
  CHECK_THROWS_WITH_AS(parse_experiment(std::string(kMinimal) + "max_step = 3\n", "t.toml"),
                       doctest::Contains("did you mean 'max_steps'?"), Error);
  // Keys read only when present (weight_decay_exclude) are in the list too.
  CHECK_THROWS_WITH_AS(parse_experiment(std::string(kMinimal) + "max_step = 3\n", "t.toml"),
                       doctest::Contains(", weight_decay_exclude"), Error);
  CHECK_THROWS_WITH_AS(parse_experiment("[data.synthetic]\n[training]\nmax_steps = \"many\"\n", "t.toml"),
                       doctest::Contains("t.toml:3:13: training.max_steps: expected an integer, got string 'many'"), Error);
  CHECK_THROWS_WITH_AS(parse_experiment("[data.synthetic]\n[model]\ndropout = 1.5\n", "t.toml"),
                       doctest::Contains("t.toml:3:11: model.dropout: must be in [0, 1), got 1.5"), Error);
  CHECK_THROWS_WITH_AS(parse_experiment("[experiment]\nname = \"x\"\n", "t.toml"),
                       doctest::Contains("t.toml: missing [data] table"), Error);
  CHECK_THROWS_WITH_AS(parse_experiment("[data]\nmax_length = 5\n", "t.toml"),
                       doctest::Contains("t.toml:1:1: data: give train_source and train_target"), Error);
  CHECK_THROWS_WITH_AS(parse_experiment("[experiment]\ndevice = \"gpu\"\n[data.synthetic]\n", "t.toml"),
                       doctest::Contains("t.toml:2:10: experiment.device: invalid device 'gpu'"), Error);
}

TEST_CASE("the optimizer, schedule and clipping keys are read and their mistakes named") {
  const ExperimentConfig c = parse_experiment("[data.synthetic]\n[training]\nschedule = \"cosine\"\nlr = 0.002\n"
                                              "min_lr = 1e-5\noptimizer = \"adamw\"\nweight_decay = 0.01\n"
                                              "weight_decay_exclude = [\"embedding\"]\nclip_norm = 1.0\n",
                                              "o.toml");
  CHECK(c.training.schedule == LrScheduleKind::cosine);
  CHECK(c.training.lr == 0.002);
  CHECK(c.training.min_lr == 1e-5);
  CHECK(c.training.optimizer == Optimizer::adamw);
  CHECK(c.training.weight_decay == 0.01);
  CHECK(c.training.weight_decay_exclude == std::vector<std::string>{"embedding"});
  CHECK(c.training.clip_norm == 1.0);
  // The resolved TOML keeps them.
  const ExperimentConfig back = parse_experiment(to_toml(c), "resolved.toml");
  CHECK(to_toml(back) == to_toml(c));
  const auto bad = [](const std::string& training) {
    return parse_experiment("[data.synthetic]\n[training]\n" + training, "b.toml");
  };
  CHECK_THROWS_WITH_AS(bad("schedule = \"exp\"\n"),
                       doctest::Contains("b.toml:3:12: training.schedule: unknown learning-rate schedule 'exp' "
                                         "(valid: inverse_sqrt, cosine, linear, constant)"),
                       Error);
  CHECK_THROWS_WITH_AS(bad("optimizer = \"sgd\"\n"),
                       doctest::Contains("b.toml:3:13: training.optimizer: unknown optimizer 'sgd' (valid: adam, adamw)"),
                       Error);
  CHECK_THROWS_WITH_AS(bad("weight_decay = 0.1\n"),
                       doctest::Contains("b.toml:3:16: training.weight_decay: 0.1 needs optimizer = \"adamw\""), Error);
  CHECK_THROWS_WITH_AS(bad("lr = 0.001\nlr_scale = 2.0\n"),
                       doctest::Contains("b.toml:3:6: training.lr: set either lr (the peak rate, 0.001) or lr_scale"),
                       Error);
  CHECK_THROWS_WITH_AS(bad("min_lr = 0.001\n"),
                       doctest::Contains("b.toml:3:10: training.min_lr: only the \"cosine\" and \"linear\" schedules"),
                       Error);
  CHECK_THROWS_WITH_AS(bad("clip_norm = -1.0\n"),
                       doctest::Contains("b.toml:3:13: training.clip_norm: must be finite and >= 0, got -1"), Error);
}

TEST_CASE("rdrop is read, written back only when on, and its mistakes named") {
  const ExperimentConfig off = parse_experiment("[data.synthetic]\n", "r.toml");
  CHECK(off.training.rdrop == 0.0);
  // Off, the resolved TOML has no rdrop key: runs of versions without it keep their identity.
  CHECK(to_toml(off).find("rdrop") == std::string::npos);
  const ExperimentConfig on = parse_experiment("[data.synthetic]\n[training]\nrdrop = 5.0\n", "r.toml");
  CHECK(on.training.rdrop == 5.0);
  CHECK(to_toml(on).find("rdrop = 5") != std::string::npos);
  const ExperimentConfig back = parse_experiment(to_toml(on), "resolved.toml");
  CHECK(back.training.rdrop == 5.0);
  CHECK(to_toml(back) == to_toml(on));
  CHECK_THROWS_WITH_AS(parse_experiment("[data.synthetic]\n[training]\nrdrop = -1.0\n", "r.toml"),
                       doctest::Contains("r.toml:3:9: training.rdrop: must be finite and >= 0, got -1"), Error);
  CHECK_THROWS_WITH_AS(parse_experiment("[data.synthetic]\n[training]\nrdrop = nan\n", "r.toml"),
                       doctest::Contains("training.rdrop: must be finite and >= 0"), Error);
}

TEST_CASE("pad_to_multiple is read, written back only when on, and its mistakes named") {
  const ExperimentConfig off = parse_experiment("[data.synthetic]\n", "p.toml");
  CHECK(off.training.pad_to_multiple == 0);
  CHECK(to_toml(off).find("pad_to_multiple") == std::string::npos);
  const ExperimentConfig on = parse_experiment("[data.synthetic]\n[training]\npad_to_multiple = 8\n", "p.toml");
  CHECK(on.training.pad_to_multiple == 8);
  CHECK(to_toml(on).find("pad_to_multiple = 8") != std::string::npos);
  const ExperimentConfig back = parse_experiment(to_toml(on), "resolved.toml");
  CHECK(back.training.pad_to_multiple == 8);
  CHECK(to_toml(back) == to_toml(on));
  CHECK_THROWS_WITH_AS(parse_experiment("[data.synthetic]\n[training]\npad_to_multiple = -8\n", "p.toml"),
                       doctest::Contains("p.toml:3:19: training.pad_to_multiple: must be >= 0, got -8"), Error);
  // Targets of up to 100 + 1 positions padded to 128 pass a model.max_length of 120.
  CHECK_THROWS_WITH_AS(
      parse_experiment("[data.synthetic]\n[data]\nmax_length = 100\n[model]\nmax_length = 120\n[training]\n"
                       "pad_to_multiple = 64\n",
                       "p.toml"),
      doctest::Contains("p.toml:7:19: training.pad_to_multiple: 64 pads targets of up to data.max_length + 1 = 101 "
                        "positions to 128, past model.max_length = 120"),
      Error);
  CHECK(parse_experiment("[data.synthetic]\n[data]\nmax_length = 100\n[model]\nmax_length = 120\n[training]\n"
                         "pad_to_multiple = 8\n",
                         "p.toml")
            .training.pad_to_multiple == 8);
}

TEST_CASE("the norm and its placement are read, written back and their mistakes named") {
  const ExperimentConfig c = parse_experiment(
      "[data.synthetic]\n[model]\nnorm_position = \"pre\"\n[model.norm]\nname = \"rms_norm\"\n", "n.toml");
  CHECK(c.model.norm_position == NormPosition::pre);
  CHECK(c.model.norm.name == "rms_norm");
  const ExperimentConfig back = parse_experiment(to_toml(c), "resolved.toml");
  CHECK(back.model.norm_position == NormPosition::pre);
  CHECK(back.model.norm.name == "rms_norm");
  CHECK(parse_experiment("[data.synthetic]\n", "d.toml").model.norm_position == NormPosition::post);  // the paper
  CHECK(parse_experiment("[data.synthetic]\n[model]\nnorm_position = \"deepnorm\"\n", "n.toml").model.norm_position ==
        NormPosition::deepnorm);
  CHECK_THROWS_WITH_AS(parse_experiment("[data.synthetic]\n[model]\nnorm_position = \"middle\"\n", "n.toml"),
                       doctest::Contains("n.toml:3:17: model.norm_position: unknown norm position 'middle' (valid: post, pre, deepnorm)"),
                       Error);
  const ExperimentConfig unknown =
      parse_experiment("[data.synthetic]\n[model.norm]\nname = \"batch_norm\"\n", "u.toml");
  CHECK_THROWS_WITH_AS(validate_plugins(unknown, nmt::testing::plugins()),
                       doctest::Contains("model.norm: unknown norm plugin 'batch_norm' (valid: layer_norm, rms_norm)"), Error);
}

TEST_CASE("synthetic dev and test sizes must not be negative") {
  // A negative size wrapped around as the corpus writer's size_t: train 10, dev -5 generated 5
  // pairs and read train pairs past them (AddressSanitizer: heap-buffer-overflow).
  CHECK_THROWS_WITH_AS(parse_experiment("[data.synthetic]\ntrain_pairs = 10\ndev_pairs = -5\n", "s.toml"),
                       contains("s.toml:3:13: data.synthetic.dev_pairs: must be >= 0, got -5"), Error);
  CHECK_THROWS_WITH_AS(parse_experiment("[data.synthetic]\ntrain_pairs = 10\ntest_pairs = -1\n", "s.toml"),
                       contains("s.toml:3:14: data.synthetic.test_pairs: must be >= 0, got -1"), Error);
  const ExperimentConfig c =
      parse_experiment("[data.synthetic]\ntrain_pairs = 10\ndev_pairs = 0\ntest_pairs = 0\n", "s.toml");
  CHECK(c.data.synth.dev_pairs == 0);
  CHECK(c.data.synth.test_pairs == 0);
}

TEST_CASE("plugins named by an experiment are checked against the registry") {
  const Registry& registry = nmt::testing::plugins();
  validate_plugins(parse_experiment(kMinimal, "ok.toml"), registry);
  std::string unknown = kMinimal;
  unknown.replace(unknown.find("\"scaled_dot\""), 12, "\"performer\"");
  CHECK_THROWS_WITH_AS(validate_plugins(parse_experiment(unknown, "u.toml"), registry),
                       contains("u.toml:15:1: model.attention: unknown attention plugin 'performer' (valid: "), Error);
  std::string bad_option = std::string(kMinimal);
  bad_option.replace(bad_option.find("bias = false"), 12, "bais = false");
  CHECK_THROWS_WITH_AS(validate_plugins(parse_experiment(bad_option, "o.toml"), registry),
                       contains("o.toml:17:1: model.attention.bais: unknown key for attention plugin 'scaled_dot'"),
                       Error);
  std::string bad_type = std::string(kMinimal);
  bad_type.replace(bad_type.find("bias = false"), 12, "bias = 3");
  CHECK_THROWS_WITH_AS(validate_plugins(parse_experiment(bad_type, "b.toml"), registry),
                       contains("b.toml:17:8: model.attention.bias: expected boolean"), Error);
}

TEST_CASE("training precision is read checked and written back") {
  CHECK(parse_experiment(kMinimal, "t.toml").training.precision == "fp32");
  for (const char* name : {"fp32", "tf32", "bf16"}) {
    const ExperimentConfig c =
        parse_experiment(std::string(kMinimal) + "precision = \"" + name + "\"\n", "t.toml");
    CHECK(c.training.precision == name);
    // In the resolved configuration (the run's identity), and read back from it.
    CHECK(to_toml(c, false).find(std::string("precision = '") + name + "'") != std::string::npos);
    CHECK(parse_experiment(to_toml(c), "resolved.toml").training.precision == name);
  }
  CHECK_THROWS_WITH_AS(parse_experiment(std::string(kMinimal) + "precision = \"fp16\"\n", "t.toml"),
                       doctest::Contains("t.toml:21:13: training.precision: expected \"fp32\", \"tf32\" or \"bf16\", "
                                         "got \"fp16\""),
                       Error);
  CHECK_THROWS_WITH_AS(parse_experiment(std::string(kMinimal) + "precision = 16\n", "t.toml"),
                       doctest::Contains("t.toml:21:13: training.precision: expected a string"), Error);
}

TEST_CASE("command-line settings read as TOML, a bare word as a string, each at its own position") {
  const toml::table t = command_line_settings(
      {"model.dropout=0.2", "model.attention.name=flash", "training.lr=5e-4", "experiment.name=\"a b\"",
       "data.synthetic.train_pairs=100", "model.dropout=0.3", "eval.lowercase=true", "x.list=[1, 2]",
       "x.path=some/where\"quoted\""});
  CHECK(t["model"]["dropout"].value<double>() == 0.3);  // the later one wins
  CHECK(t["model"]["attention"]["name"].value<std::string>() == "flash");
  CHECK(t["training"]["lr"].value<double>() == 5e-4);
  CHECK(t["experiment"]["name"].value<std::string>() == "a b");
  CHECK(t["data"]["synthetic"]["train_pairs"].value<std::int64_t>() == 100);
  CHECK(t["eval"]["lowercase"].value<bool>() == true);
  CHECK(t["x"]["list"].as_array()->size() == 2);
  CHECK(t["x"]["path"].value<std::string>() == "some/where\"quoted\"");
  const toml::node* lr = t["training"]["lr"].node();
  REQUIRE(lr != nullptr);
  CHECK(*lr->source().path == "--set training.lr=5e-4");
  for (const char* bad : {"model.dropout", "=3", "model..dropout=1", ".x=1"})
    CHECK_THROWS_WITH_AS(command_line_settings({bad}), doctest::Contains("--set: expects KEY=VALUE"), Error);
}

TEST_CASE("--set changes an experiment's value over its file's, checked like the file's") {
  nmt::testing::ScratchDir dir;
  const std::string path = (dir / "t.toml").string();
  const std::string text = kMinimal;
  nmt::testing::write_bytes(path, std::vector<unsigned char>(text.begin(), text.end()));
  CHECK(load_experiment(path).training.max_steps != 7);
  const ExperimentConfig c = load_experiment(path, {"training.max_steps=7", "model.dropout=0.25"});
  CHECK(c.training.max_steps == 7);
  CHECK(c.model.dropout.residual == doctest::Approx(0.25));
  CHECK_THROWS_WITH_AS(load_experiment(path, {"model.dropout=1.5"}),
                       doctest::Contains("--set model.dropout=1.5:1:5: model.dropout: must be in [0, 1), got 1.5"), Error);
}
