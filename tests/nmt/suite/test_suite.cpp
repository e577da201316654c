#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <unistd.h>

#include "attnlab/error.h"
#include "attnlab/nmt/model/parameter_count.h"
#include "attnlab/nmt/suite/suite.h"
#include "attnlab/nmt/model/transformer.h"
#include "nmt_testing.h"

using namespace attnlab;
using namespace attnlab::nmt;
namespace fs = std::filesystem;

namespace {

// A scratch folder for suite files, removed at exit.
struct Scratch {
  fs::path dir = fs::temp_directory_path() / ("attnlab-suite-test-" + std::to_string(::getpid()));
  Scratch() { fs::create_directories(dir); }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    const fs::path p = dir / name;
    std::ofstream(p) << text;
    return p.string();
  }
};

const Scratch& scratch() {
  static Scratch s;
  return s;
}

const char* kBase = R"([experiment]
name = "tiny"

[data.synthetic]
train_pairs = 100

[vocab]
size = 300

[model]
encoder_layers = 2
decoder_layers = 2
d_model = 64
heads = 4
d_ff = 128

[training]
max_steps = 20

[eval]
beam = 4
)";

std::string suite_text(const std::string& body) {
  return "[suite]\nname = \"s\"\nbase = \"tiny-base.toml\"\n" + body;
}

Suite load(const std::string& name, const std::string& text) {
  scratch().write("tiny-base.toml", kBase);
  return load_suite(scratch().write(name, text));
}

const SuiteRow& find(const Suite& s, const std::string& name, std::uint64_t seed = 1) {
  for (const auto& r : s.rows)
    if (r.name == name && r.seed == seed) return r;
  FAIL("no row " << name);
  throw 0;
}

std::string setting(const SuiteRow& r, const std::string& key) {
  for (const auto& [k, v] : r.settings)
    if (k == key) return v;
  return "";
}

doctest::Contains contains(const std::string& text) { return doctest::Contains(text.c_str()); }

const std::string kExperiments = ATTNLAB_TEST_EXPERIMENTS_DIR;

}  // namespace

TEST_CASE("suite rows override the base with dotted keys and nested tables") {
  const Suite s = load("rows.toml", suite_text(R"(
[base.training]
max_steps = 50

[rows.heads1]
"model.heads" = 1
paper = { ppl = 5.29, bleu = 24.9 }

[rows.wide]
model.d_model = 128
model.d_k = 8
training.label_smoothing = 0.0

[rows.learned]
[rows.learned.model.positional]
name = "learned"
)"));
  CHECK(s.name == "s");
  CHECK(s.run_dir == "runs/s");
  REQUIRE(s.rows.size() == 4);
  CHECK(s.rows[0].name == "base");
  CHECK(s.rows[1].name == "heads1");
  CHECK(s.rows[2].name == "wide");
  CHECK(s.rows[3].name == "learned");
  const SuiteRow& base = s.rows[0];
  CHECK(base.settings.empty());
  CHECK(base.config.training.max_steps == 50);
  CHECK(base.config.model.dims.n_heads == 4);
  CHECK(base.config.model.dims.d_k == 16);
  const SuiteRow& h1 = s.rows[1];
  CHECK(h1.config.model.dims.n_heads == 1);
  CHECK(h1.config.model.dims.d_k == 64);  // d_model / heads when not given
  CHECK(h1.config.model.dims.d_v == 64);
  CHECK(h1.config.training.max_steps == 50);
  REQUIRE(h1.paper.has_value());
  CHECK(*h1.paper->ppl == doctest::Approx(5.29));
  CHECK(*h1.paper->bleu == doctest::Approx(24.9));
  CHECK(!h1.paper->params_m.has_value());
  CHECK(setting(h1, "model.heads") == "1");
  const SuiteRow& wide = s.rows[2];
  CHECK(wide.config.model.dims.d_model == 128);
  CHECK(wide.config.model.dims.d_k == 8);
  CHECK(wide.config.model.dims.d_v == 32);
  CHECK(wide.config.training.label_smoothing == 0.0);
  CHECK(setting(wide, "training.label_smoothing") == "0.0");
  CHECK(wide.settings.size() == 3);
  CHECK(s.rows[3].config.model.positional.name == "learned");
  CHECK(setting(s.rows[3], "model.positional.name") == "learned");
  for (const auto& r : s.rows) {
    CHECK(r.config.run_dir == row_dir(s, r));
    CHECK(r.config.run_dir == "runs/s/" + r.name + "-s1-" + r.hash);
    CHECK(r.hash.size() == 16);
    CHECK(r.config.data.cache_dir == "runs/s/.cache");
  }
  INFO(h1.position);
  CHECK(h1.position.find("rows.toml:8:1") != std::string::npos);
}

TEST_CASE("grids cross their axes and tie the keys of one axis") {
  const Suite s = load("grid.toml", suite_text(R"(run_dir = "out"
seeds = [1, 2]

[grids.heads]
axes = [ { "model.heads" = [1, 4, 16], "model.d_k" = [64, 16, 4] },
         { model.dropout = [0.0, 0.2] } ]
)"));
  REQUIRE(s.rows.size() == 2 * (1 + 6));
  CHECK(s.run_dir == (scratch().dir / "out").string());
  CHECK(s.rows[0].name == "base");
  CHECK(s.rows[0].seed == 1);
  CHECK(s.rows[1].name == "base");
  CHECK(s.rows[1].seed == 2);
  CHECK(s.rows[0].hash != s.rows[1].hash);
  CHECK(s.rows[0].config.seed == 1);
  CHECK(s.rows[1].config.seed == 2);
  const std::vector<std::tuple<std::string, std::int64_t, std::int64_t, double>> expected = {
      {"heads-01", 1, 64, 0.0}, {"heads-02", 1, 64, 0.2}, {"heads-03", 4, 16, 0.0},
      {"heads-04", 4, 16, 0.2}, {"heads-05", 16, 4, 0.0}, {"heads-06", 16, 4, 0.2}};
  for (const auto& [name, heads, dk, drop] : expected) {
    const SuiteRow& r = find(s, name, 2);
    CHECK(r.config.model.dims.n_heads == heads);
    CHECK(r.config.model.dims.d_k == dk);
    CHECK(r.config.model.dropout.residual == doctest::Approx(drop));
    CHECK(setting(r, "model.heads") == std::to_string(heads));
    CHECK(setting(r, "model.d_k") == std::to_string(dk));
    CHECK(r.settings.size() == 3);
  }
  CHECK_THROWS_WITH_AS(load("grid-bad.toml", suite_text(R"(
[grids.g]
axes = [ { "model.heads" = [1, 4], "model.d_k" = [64, 16, 4] } ]
)")),
                       contains("grid-bad.toml:6:50: grids.g.axes[0].model.d_k: 3 values, but 'model.heads' has 2"),
                       Error);
}

TEST_CASE("a row may take its own seeds, the base row too") {
  const Suite s = load("rowseeds.toml", suite_text(R"(seeds = [1]
[rows.base]
seeds = [1, 2, 3]
paper = { ppl = 4.92 }
[rows.a]
"model.heads" = 2
[rows.b]
"model.heads" = 1
seeds = [7]
)"));
  std::vector<std::pair<std::string, std::uint64_t>> got;
  for (const auto& r : s.rows) got.emplace_back(r.name, r.seed);
  const std::vector<std::pair<std::string, std::uint64_t>> expected{{"base", 1}, {"base", 2}, {"base", 3}, {"a", 1}, {"b", 7}};
  CHECK(got == expected);
  CHECK(find(s, "b", 7).config.seed == 7);
  CHECK(find(s, "b", 7).settings.size() == 1);  // seeds is not a setting
  CHECK(find(s, "base", 3).paper->ppl == 4.92);
  CHECK_THROWS_WITH_AS(load("rowseeds-bad.toml", suite_text("[rows.a]\nseeds = [2, 2]\n")),
                       contains("rowseeds-bad.toml:5:9: rows.a.seeds: a seed is listed twice"), Error);
  CHECK_THROWS_WITH_AS(load("baseseeds-bad.toml", suite_text("[rows.base]\nseeds = []\n")),
                       contains("baseseeds-bad.toml:5:9: rows.base.seeds: expected a non-empty array"), Error);
}

TEST_CASE("suite variables come from vars then the environment") {
  ::setenv("ATTNLAB_SUITE_TEST_DIR", "/from/env", 1);
  const Suite s = load("vars.toml", R"([suite]
name = "${prefix}-vars"

[vars]
prefix = "v"
data = "${ATTNLAB_SUITE_TEST_DIR}/corpus"
dev = "${ATTNLAB_SUITE_TEST_UNSET:-/default}/dev"

[base.data]
train_source = "${data}.en"
train_target = "${data}.de"
dev_source = "${dev}.en"
dev_target = "${dev}.de"

[rows.x]
"data.dev_source" = "${data}-x.en"
)");
  CHECK(s.name == "v-vars");
  REQUIRE(s.rows.size() == 2);
  CHECK(s.rows[0].config.data.train_source == "/from/env/corpus.en");
  CHECK(s.rows[0].config.data.dev_target == "/default/dev.de");
  CHECK(s.rows[1].config.data.dev_source == "/from/env/corpus-x.en");
  CHECK(s.rows[1].config.data.dev_target == "/default/dev.de");
  CHECK_THROWS_WITH_AS(load("undefined.toml", suite_text("\n[rows.x]\n\"data.dev_source\" = \"${nope}/a\"\n")),
                       contains("undefined.toml:6:21: rows.x.data.dev_source: undefined variable 'nope'"), Error);
}

TEST_CASE("row hashes follow the configuration and the seed") {
  const std::string body = R"(seeds = [1, 2]
[rows.a]
"model.heads" = 2
[rows.b]
"model.heads" = 2
"eval.beam" = 8
[rows.c]
"model.heads" = 2
"training.max_steps" = 21
)";
  const Suite s1 = load("hash1.toml", suite_text(body));
  const Suite s2 = load("hash2.toml", suite_text(body));
  CHECK(find(s1, "a").hash == find(s2, "a").hash);  // same file content, same hashes
  CHECK(find(s1, "a").hash != find(s1, "a", 2).hash);
  CHECK(find(s1, "base").hash != find(s1, "a").hash);
  CHECK(find(s1, "c").hash != find(s1, "a").hash);
  // Only evaluation differs: same training run, so the same hash (b and a differ only by name).
  Suite s3 = load("hash3.toml", suite_text("[rows.a]\n\"model.heads\" = 2\n\"eval.beam\" = 8\n\"eval.bleu\" = \"tokenized\"\n"));
  CHECK(find(s3, "a").hash == find(s1, "a").hash);
  CHECK(find(s3, "a").config.eval.beam == 8);
  std::set<std::string> hashes;
  for (const auto& r : s1.rows) hashes.insert(r.hash + r.name);
  CHECK(hashes.size() == s1.rows.size());
}

TEST_CASE("suite mistakes name file line column and key") {
  // {file, its text, what the error must say}
  const std::vector<std::array<std::string, 3>> mistakes = {
      {"syntax.toml", suite_text("[rows.a]\n\"model.heads\" = = 1\n"), "syntax.toml:5:17: TOML syntax error"},
      {"suitekey.toml", "[suite]\nnmae = \"x\"\n",
       "suitekey.toml:2:1: suite.nmae: unknown key (valid keys here: base, name, reference, run_dir, seeds, slurm, "
       "unsupported); "
       "did you mean 'name'?"},
      {"rowkey.toml", suite_text("\n[rows.A1]\n\"model.headz\" = 1\n"),
       "rowkey.toml:6:1: rows.A1: model.headz: unknown key (valid keys here: "},
      {"rowkey2.toml", suite_text("[rows.A1]\nmodel.headz = 1\n"), "did you mean 'heads'?"},
      {"rowtype.toml", suite_text("[rows.A1]\n\"model.heads\" = \"eight\"\n"),
       "rowtype.toml:5:17: rows.A1: model.heads: expected an integer, got string 'eight'"},
      {"basetype.toml", suite_text("[base.training]\nmax_steps = 1.5\n"),
       "basetype.toml:5:13: training.max_steps: expected an integer, got float 1.5"},
      {"top.toml", suite_text("[rowz.a]\n"), "top.toml:4:2: rowz: unknown key"},
      {"seeds.toml", suite_text("seeds = [1, \"2\"]\n"), "seeds.toml:4:9: suite.seeds: expected a non-empty array"},
      {"nobase.toml", "[suite]\nbase = \"missing.toml\"\n", "missing.toml: cannot open base experiment"},
      {"paper.toml", suite_text("[rows.a]\npaper = { ppl = 1, blue = 2 }\n"),
       "paper.toml:5:20: rows.a.paper.blue: unknown key"},
  };
  for (const auto& m : mistakes) {
    INFO(m[0]);
    CHECK_THROWS_WITH_AS(load(m[0], m[1]), contains(m[2]), Error);
  }
  // Plugins are checked once they are known.
  const Suite s = load("plugin.toml", suite_text("\n[rows.fast]\n\"model.attention.name\" = \"performer\"\n"));
  validate_plugins(find(s, "base").config, nmt::testing::plugins());
  CHECK_THROWS_WITH_AS(validate_plugins(find(s, "fast").config, nmt::testing::plugins()),
                       contains("plugin.toml:6:26: model.attention: unknown attention plugin 'performer'"), Error);
}

TEST_CASE("parameter counts composed from one module of each kind equal the built model") {
  struct Case {
    std::int64_t enc, dec, d, h, dk, dv, ff;
    const char* attention;
    const char* positional;
    const char* ffn;
  };
  const Case cases[] = {{1, 1, 8, 2, 3, 5, 12, "scaled_dot", "sinusoidal", "relu"},
                        {2, 3, 16, 4, 4, 4, 32, "scaled_dot", "learned", "gelu"},
                        {0, 2, 12, 3, 2, 6, 20, "additive", "none", "swiglu"},
                        {3, 1, 24, 1, 24, 24, 40, "scaled_dot", "learned", "relu"}};
  for (const Case& k : cases) {
    TransformerConfig c = nmt::testing::tiny_config(17);
    c.encoder_layers = k.enc;
    c.decoder_layers = k.dec;
    c.dims = {.d_model = k.d, .n_heads = k.h, .d_k = k.dk, .d_v = k.dv, .d_ff = k.ff, .max_length = 40};
    c.attention.name = k.attention;
    c.positional.name = k.positional;
    c.ffn.name = k.ffn;
    Generator init(3), drop(4);
    Transformer model(c, nmt::testing::plugins(), init, drop);
    const ParameterCount p = count_parameters(c, nmt::testing::plugins());
    INFO(k.attention << " " << k.positional << " " << k.ffn << " d_model " << k.d);
    CHECK(p.total == model.parameter_count());
    CHECK(p.embedding == 17 * k.d);
    if (std::string(k.attention) == "scaled_dot" && std::string(k.ffn) == "relu" &&
        std::string(k.positional) == "sinusoidal")
      CHECK(p.total == expected_parameter_count(c));
  }
}

TEST_CASE("table3 suite expands to the paper's twenty rows") {
  const Suite s = load_suite(kExperiments + "/table3.toml");
  CHECK(s.name == "table3");
  const std::vector<std::string> names = {"base", "A1", "A2", "A3", "A4", "B1", "B2", "C1", "C2", "C3",
                                          "C4",   "C5", "C6", "C7", "D1", "D2", "D3", "D4", "E",  "big"};
  REQUIRE(s.rows.size() == names.size());
  for (std::size_t i = 0; i < names.size(); ++i) CHECK(s.rows[i].name == names[i]);
  const SuiteRow& base = find(s, "base");
  const auto& m = base.config.model;
  CHECK(m.encoder_layers == 6);
  CHECK(m.decoder_layers == 6);
  CHECK(m.dims.d_model == 512);
  CHECK(m.dims.d_ff == 2048);
  CHECK(m.dims.n_heads == 8);
  CHECK(m.dims.d_k == 64);
  CHECK(m.dims.d_v == 64);
  CHECK(m.dropout.residual == doctest::Approx(0.1));
  CHECK(base.config.training.label_smoothing == doctest::Approx(0.1));
  CHECK(m.positional.name == "sinusoidal");
  CHECK(base.config.training.max_steps == 100000);
  CHECK(base.config.training.batch_tokens == 25000);
  CHECK(base.config.training.warmup_steps == 4000);
  CHECK(base.config.vocab.size == 37000);
  CHECK(base.config.eval.beam == 4);
  CHECK(base.config.eval.alpha == doctest::Approx(0.6));
  CHECK(base.config.eval.bleu == "paper-wmt14");
  CHECK(base.config.data.dev_source.ends_with("shared/data/wmt14_ende/newstest2013.en"));
  CHECK(fs::exists(base.config.data.dev_source));
  CHECK(*base.paper->params_m == 65);
  for (const auto& [row, h, dk] : {std::tuple{"A1", 1, 512}, {"A2", 4, 128}, {"A3", 16, 32}, {"A4", 32, 16}}) {
    const auto& d = find(s, row).config.model.dims;
    CHECK(d.n_heads == h);
    CHECK(d.d_k == dk);
    CHECK(d.d_v == dk);
    CHECK(d.n_heads * d.d_k == 512);
  }
  CHECK(find(s, "B1").config.model.dims.d_k == 16);
  CHECK(find(s, "B1").config.model.dims.d_v == 64);
  CHECK(find(s, "B2").config.model.dims.d_k == 32);
  CHECK(find(s, "C1").config.model.encoder_layers == 2);
  CHECK(find(s, "C3").config.model.decoder_layers == 8);
  CHECK(find(s, "C4").config.model.dims.d_model == 256);
  CHECK(find(s, "C4").config.model.dims.d_k == 32);
  CHECK(find(s, "C5").config.model.dims.d_v == 128);
  CHECK(find(s, "C7").config.model.dims.d_ff == 4096);
  CHECK(find(s, "D1").config.model.dropout.residual == 0.0);
  CHECK(find(s, "D4").config.training.label_smoothing == doctest::Approx(0.2));
  CHECK(find(s, "E").config.model.positional.name == "learned");
  const auto& big = find(s, "big").config;
  CHECK(big.model.dims.d_model == 1024);
  CHECK(big.model.dims.d_ff == 4096);
  CHECK(big.model.dims.n_heads == 16);
  CHECK(big.model.dims.d_k == 64);
  CHECK(big.model.dropout.residual == doctest::Approx(0.3));
  CHECK(big.training.max_steps == 300000);
  CHECK(*find(s, "big").paper->ppl == doctest::Approx(4.33));
  std::set<std::string> hashes;
  for (const auto& r : s.rows) hashes.insert(r.hash);
  CHECK(hashes.size() == s.rows.size());
}

TEST_CASE("table3 parameter counts agree with the paper") {
  const Suite s = load_suite(kExperiments + "/table3.toml");
  std::map<std::string, double> ours, paper;
  for (const auto& r : s.rows) {
    ours[r.name] = static_cast<double>(count_parameters(r.config.model, nmt::testing::plugins()).total) / 1e6;
    if (r.paper && r.paper->params_m) paper[r.name] = *r.paper->params_m;
  }
  CHECK(paper.size() == 11);
  for (const auto& entry : paper) {
    const std::string& name = entry.first;  // (clang < 16 cannot capture structured bindings)
    const double p = entry.second;
    INFO(name << ": ours " << ours[name] << "M, paper " << p << "M");
    // The paper's vocabulary (about 37000) and bias layout are not exactly known: within 7%.
    CHECK(std::abs(ours[name] - p) <= 0.07 * p);
    if (name == "base") continue;
    // Changes from the base: within 2M, or 2.5% of the change for the large ones (C5, big).
    const double our_change = ours[name] - ours["base"], paper_change = p - paper["base"];
    CHECK(std::abs(our_change - paper_change) <= std::max(2.0, 0.025 * std::abs(paper_change)));
  }
  // Rows without a paper count: A keeps the size (h d_k = d_model), D and the sinusoidal rows too.
  CHECK(std::abs(ours["A1"] - ours["base"]) < 0.01);
  CHECK(ours["D1"] == ours["base"]);
  CHECK(ours["E"] > ours["base"]);
}

TEST_CASE("scaled table3 suites resolve") {
  const Suite m = load_suite(kExperiments + "/table3-multi30k.toml");
  CHECK(m.rows.size() == 20);
  CHECK(find(m, "base").config.model.dims.d_model == 128);
  CHECK(find(m, "A1").config.model.dims.d_k == 128);
  CHECK(find(m, "big").config.training.max_steps == 3 * find(m, "base").config.training.max_steps);
  CHECK(find(m, "base").config.eval.bleu == "tokenized");
  CHECK(fs::exists(find(m, "base").config.data.train_source));
  CHECK(fs::exists(find(m, "base").config.data.dev_target));
  const Suite t = load_suite(kExperiments + "/table3-smoke.toml");
  CHECK(t.rows.size() == 6);
  CHECK(find(t, "base").config.data.synthetic);
  for (const auto& r : t.rows) validate_plugins(r.config, nmt::testing::plugins());
  for (const auto& r : m.rows) validate_plugins(r.config, nmt::testing::plugins());
}

TEST_CASE("suite rows choose the training precision and its mistakes point into the suite file") {
  const Suite s = load("precision.toml", suite_text("\n[rows.bf16]\ntraining.precision = \"bf16\"\n"));
  CHECK(find(s, "base").config.training.precision == "fp32");
  const SuiteRow& row = find(s, "bf16");
  CHECK(row.config.training.precision == "bf16");
  CHECK(setting(row, "training.precision") == "bf16");
  CHECK(row.hash != find(s, "base").hash);  // another configuration: another run folder
  CHECK_THROWS_WITH_AS(load("badprecision.toml", suite_text("\n[rows.half]\ntraining.precision = \"fp16\"\n")),
                       contains("badprecision.toml:6:22: rows.half: training.precision: expected \"fp32\", \"tf32\" or "
                                "\"bf16\", got \"fp16\""),
                       Error);
}
