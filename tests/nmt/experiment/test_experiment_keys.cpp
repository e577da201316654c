// The lists of an experiment file's and a suite file's keys (attnlab config --keys): the reader's
// key log records each key with the type and default the reader gives it, and the list is what the
// reader takes: every key it lists is accepted in a file, and one it does not list is refused as
// unknown.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "attnlab/config/key_log.h"
#include "attnlab/config/table_reader.h"
#include "attnlab/error.h"
#include "attnlab/nmt/experiment/experiment.h"
#include "attnlab/nmt/experiment/experiment_keys.h"
#include "attnlab/nmt/suite/suite_keys.h"

namespace attnlab::nmt {
namespace {

const ExperimentKey& key_named(const std::vector<ExperimentKey>& keys, const std::string& path) {
  const auto it = std::find_if(keys.begin(), keys.end(), [&](const ExperimentKey& k) { return k.path == path; });
  REQUIRE_MESSAGE(it != keys.end(), "no key ", path);
  return *it;
}

}  // namespace

TEST_CASE("the key log records each key as the reader asks for it, only while it is alive") {
  const toml::table doc = toml::parse("[t]\nn = 3\nflag = true\n");
  {
    config::KeyLog log;
    config::TableReader root(doc, "");
    auto t = root.table("t");
    REQUIRE(t);
    CHECK_FALSE(t->has("names"));  // no type yet ...
    CHECK(t->get_int("n", 7) == 3);
    (void)t->get_strings("names");  // ... until a get says it
    (void)t->get_real("rate", 0.25);
    (void)t->get_bool("flag", false);
    (void)t->get_string("mode", "fast");
    (void)t->get_int("n", 9);  // again: the first reading stays
    const auto& r = log.records();
    REQUIRE(r.size() == 6);
    CHECK(r[0].path == "t");
    CHECK(r[0].type == "table");
    CHECK(r[1].path == "t.names");
    CHECK(r[1].type == "array of strings");
    CHECK(r[1].default_value == "[]");
    CHECK(r[2].path == "t.n");
    CHECK(r[2].default_value == "7");
    CHECK(r[3].type == "number");
    CHECK(r[3].default_value == "0.25");
    CHECK(r[4].default_value == "false");
    CHECK(r[5].default_value == "\"fast\"");
  }
  // No log alive: nothing is recorded, nothing fails.
  config::TableReader root(doc, "");
  CHECK(root.table("t"));
}

TEST_CASE("experiment keys are the reader's keys, with its types and defaults and a meaning each") {
  const std::vector<ExperimentKey> keys = experiment_keys();
  CHECK(keys.size() >= 100);
  for (const ExperimentKey& k : keys) {
    INFO(k.path);
    CHECK_FALSE(k.meaning.empty());
    CHECK_FALSE(k.type.empty());
  }
  CHECK(key_named(keys, "training.max_steps").default_value == "100000");
  CHECK(key_named(keys, "training.max_steps").type == "integer");
  CHECK(key_named(keys, "model.dropout").default_value == "0.1");
  CHECK(key_named(keys, "eval.bleu").default_value == "\"sacrebleu\"");
  CHECK(key_named(keys, "model.fused_kernels").type == "boolean");
  CHECK(key_named(keys, "training.weight_decay_exclude").type == "array of strings");  // read only when present
  CHECK(key_named(keys, "model.attention.tensors.NAME.shape").type == "array");
  // The defaults are the reader's: an empty [training] gives them.
  const ExperimentConfig c = parse_experiment("[data.synthetic]\n[training]\n", "defaults.toml");
  CHECK(std::to_string(c.training.max_steps) == key_named(keys, "training.max_steps").default_value);
  CHECK(std::to_string(c.training.warmup_steps) == key_named(keys, "training.warmup_steps").default_value);

  const std::string text = render_experiment_keys(keys, false);
  CHECK(text.starts_with("key "));
  CHECK(text.find("\ntraining.max_steps ") != std::string::npos);
  const std::string md = render_experiment_keys(keys, true);
  CHECK(md.find("| `training.max_steps` | integer | `100000` | optimizer steps |") != std::string::npos);
}

TEST_CASE("every listed leaf key is accepted by the reader, and an unlisted one refused") {
  // Each scalar key of [training], [eval], [model] and [vocab] written into a file with its default.
  std::string file = "[data.synthetic]\n";
  std::string table;
  for (const ExperimentKey& k : experiment_keys()) {
    const auto dot = k.path.find('.');
    if (dot == std::string::npos || k.default_value.empty() || k.path.find('.', dot + 1) != std::string::npos)
      continue;
    const std::string t = k.path.substr(0, dot);
    if (t != "training" && t != "eval" && t != "model" && t != "vocab") continue;
    if (k.path == "model.d_k" || k.path == "model.d_v" || k.path == "training.lr") continue;  // derived or exclusive
    if (t != table) file += "[" + t + "]\n", table = t;
    file += k.path.substr(dot + 1) + " = " + k.default_value + "\n";
  }
  CAPTURE(file);
  CHECK_NOTHROW(parse_experiment(file, "every-key.toml"));
  CHECK_THROWS_WITH_AS(parse_experiment(file + "max_stepz = 3\n", "every-key.toml"),
                       doctest::Contains("unknown key"), Error);
}

TEST_CASE("suite keys are the suite reader's own tables, with a meaning each") {
  const std::vector<ExperimentKey> keys = suite_keys();
  CHECK(keys.size() >= 35);
  for (const ExperimentKey& k : keys) {
    INFO(k.path);
    CHECK_FALSE(k.meaning.empty());
    CHECK_FALSE(k.type.empty());
    CHECK_FALSE(k.path.starts_with("training."));  // the rows' experiments are listed as experiment keys
  }
  CHECK(key_named(keys, "search.eta").default_value == "3");
  CHECK(key_named(keys, "search.metric").default_value == "\"dev_ppl\"");
  CHECK(key_named(keys, "search.first_rung").default_value.empty());  // required: no default
  CHECK(key_named(keys, "suite.seeds").type == "array of integers");  // read raw, logged by the reader
  CHECK(key_named(keys, "rows.NAME.paper.bleu").type == "number");
  CHECK(key_named(keys, "suite.slurm.max_running").type == "integer");
}

}  // namespace attnlab::nmt
