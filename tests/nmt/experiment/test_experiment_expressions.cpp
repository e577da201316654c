// [model.attention]'s score expressions read from an experiment file: every site's expressions and
// the tensors, written back in the resolved TOML and read again the same, and every mistake named at
// its place: inside the string (line and column in the file), in a tensor's table, or a tensor no
// expression reads.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "attnlab/error.h"
#include "attnlab/nmt/experiment/experiment.h"
#include "nmt_testing.h"

using namespace attnlab;
using namespace attnlab::nmt;

namespace {

// The model has 4 heads and max_length 64; line 11 holds [model.attention].
std::string with_attention(const std::string& table) {
  return R"([experiment]
name = "tiny"

[data.synthetic]
train_pairs = 100

[model]
d_model = 16
heads = 4
max_length = 64
[model.attention]
name = "flash"
)" + table;
}

// The file is written so that the positions inside strings can be read back from it.
ExperimentConfig read(const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / fmt::format("attnlab-expr-{}.toml", ::getpid());
  std::ofstream(path) << text;
  try {
    ExperimentConfig c = parse_experiment(text, path.string());
    std::filesystem::remove(path);
    return c;
  } catch (...) {
    std::filesystem::remove(path);
    throw;
  }
}

std::string error_of(const std::string& text) {
  try {
    read(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("score expressions are read for every site, overridden per site, and written back") {
  const ExperimentConfig c = read(with_attention(R"(score_mod = "score + bias[h, clamp(kv_idx - q_idx, -2, 2) + 2]"
mask_mod = "abs(q_idx - kv_idx) <= 8"
[model.attention.cross]
mask_mod = ""
[model.attention.tensors.bias]
shape = ["heads", 5]
init = "normal"
std = 0.5
learned = true
)"));
  const AttentionExpressions& e = c.model.expressions;
  CHECK(e.encoder.mask_mod.text == "abs(q_idx - kv_idx) <= 8");
  CHECK(e.decoder.score_mod.text == e.encoder.score_mod.text);
  CHECK(e.cross.mask_mod.empty());
  CHECK(e.cross.score_mod.text == e.encoder.score_mod.text);
  REQUIRE(e.tensors.size() == 1);
  CHECK(e.tensors[0].shape == std::vector<std::int64_t>{4, 5});
  CHECK(e.tensors[0].per_head == std::vector<bool>{true, false});
  CHECK(e.tensors[0].std == 0.5);
  CHECK(e.tensors[0].learned);
  // The resolved TOML: the sites differ, so each has its table; read again, the same.
  const std::string resolved = to_toml(c);
  CHECK(resolved.find("[model.attention.cross]") != std::string::npos);
  CHECK(resolved.find("shape = [ 'heads', 5 ]") != std::string::npos);
  const ExperimentConfig again = parse_experiment(resolved, "resolved.toml");
  CHECK(to_toml(again) == resolved);
  CHECK(again.model.expressions.cross.mask_mod.empty());
  // Without expressions nothing is written (the identity of runs without them is unchanged).
  CHECK(to_toml(read(with_attention(""))).find("score_mod") == std::string::npos);
}

TEST_CASE("a mistake inside an expression is named at its line and column in the file") {
  // Line 13, the string's first character at column 14.
  const std::string m = error_of(with_attention("score_mod = \"score + kvidx\"\n"));
  CHECK(m.find("attnlab-expr-") != std::string::npos);
  CHECK(m.find(".toml:13:22: model.attention.score_mod: unknown name 'kvidx'") != std::string::npos);
  CHECK(m.find("did you mean 'kv_idx'?") != std::string::npos);
  // In a site's table, and in a triple-quoted string that starts on the next line.
  CHECK(error_of(with_attention("[model.attention.decoder]\nmask_mod = \"q_idx\"\n"))
            .find(".toml:14:13: model.attention.decoder.mask_mod: mask_mod gives an integer") != std::string::npos);
  CHECK(error_of(with_attention("score_mod = \"\"\"\nscore +\n  2 * kv_idx +\n  foo\"\"\"\n"))
            .find(".toml:16:3: model.attention.score_mod: unknown name 'foo'") != std::string::npos);
  // An index that can leave its tensor, with the model's own limits in the message.
  CHECK(error_of(with_attention("score_mod = \"score + t[h, kv_idx]\"\n[model.attention.tensors.t]\nshape = "
                                "[\"heads\", 8]\n"))
            .find("index 2 of 't' can leave its range [0, 7]: it ranges over [0, 63] for h in [0, 3], q_idx and "
                  "kv_idx in [0, 63] (model.max_length 64)") != std::string::npos);
}

TEST_CASE("tensor tables: their mistakes are named at the table") {
  auto tensor = [](const std::string& body) {
    return with_attention("score_mod = \"score * t[h]\"\n[model.attention.tensors.t]\n" + body);
  };
  CHECK(error_of(tensor("init = \"zeros\"\n")).find("model.attention.tensors.t: a tensor needs shape = [...]") !=
        std::string::npos);
  CHECK(error_of(tensor("shape = [\"head\"]\n")).find("tensors.t.shape: each size is an integer or \"heads\"") !=
        std::string::npos);
  CHECK(error_of(tensor("shape = [4]\ninit = \"ones\"\n"))
            .find("tensors.t.init: unknown tensor init 'ones' (valid: zeros, normal, alibi_slopes, values)") !=
        std::string::npos);
  CHECK(error_of(tensor("shape = [4]\nvalues = [1, 2, 3]\n")).find("3 values for shape [4], which holds 4") !=
        std::string::npos);
  CHECK(error_of(tensor("shape = [4]\ninit = \"values\"\n")).find("init = \"values\" goes with values = [...]") !=
        std::string::npos);
  CHECK(error_of(tensor("shape = [4]\nlearn = true\n")).find("did you mean 'learned'?") != std::string::npos);
  // values may be nested, row-major.
  const ExperimentConfig c = read(with_attention("score_mod = \"score * t[h, 1]\"\n[model.attention.tensors.t]\n"
                                                 "shape = [\"heads\", 2]\nvalues = [[1, 2], [3, 4], [5, 6], [7, 8]]\n"));
  CHECK(c.model.expressions.tensors[0].values == std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8});
  // A tensor that no site reads is a mistake, as tensors without expressions are.
  CHECK(error_of(with_attention("score_mod = \"score\"\n[model.attention.tensors.u]\nshape = [4]\n"))
            .find("tensor 'u' is declared but no score_mod or mask_mod reads it") != std::string::npos);
  CHECK(error_of(with_attention("[model.attention.tensors.u]\nshape = [4]\n"))
            .find("tensors are declared but no score_mod or mask_mod reads them") != std::string::npos);
}

TEST_CASE("an attention plugin that does not apply expressions is refused, or its fallback serves") {
  std::string text = with_attention("score_mod = \"score * 2\"\n");
  text.replace(text.find("name = \"flash\""), 14, "name = \"additive\"");
  ExperimentConfig c = read(text);
  CHECK_THROWS_WITH_AS(validate_plugins(c, nmt::testing::plugins()),
                       doctest::Contains("attention plugin 'additive' does not support score expressions (score_mod, "
                                         "mask_mod) on cpu"),
                       Error);
  c.model.attention.fallback = "scaled_dot";
  const auto notices = validate_plugins(c, nmt::testing::plugins());
  REQUIRE(notices.size() == 1);
  CHECK(notices[0].find("using its fallback 'scaled_dot'") != std::string::npos);
}
