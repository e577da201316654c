// Plugin options from an experiment's TOML table: errors name file:line:column, the key and the
// valid keys.
#include <doctest/doctest.h>

#include "attnlab/config/plugin_options.h"
#include "attnlab/error.h"

using namespace attnlab;

namespace {

const std::vector<OptionSpec> kSpecs = {
    {"bias", OptionType::boolean, OptionValue(true), "learn biases"},
    {"window", OptionType::integer, std::nullopt, "local window size"},
    {"temperature", OptionType::real, OptionValue(1.0), "softmax temperature"},
};

Options parse(const std::string& text) {
  toml::table doc = toml::parse(std::string_view(text), std::string_view("exp.toml"));
  return config::plugin_options_from_toml(kSpecs, *doc["model"]["attention"].as_table(), "model.attention",
                                          "attention plugin 'local'");
}

}  // namespace

TEST_CASE("plugin options are read with defaults and integer-to-float promotion") {
  Options o = parse("[model.attention]\nname = \"local\"\nwindow = 16\ntemperature = 2\n");
  CHECK(o.get_bool("bias"));
  CHECK(o.get_int("window") == 16);
  CHECK(o.get_real("temperature") == 2.0);
}

TEST_CASE("an unknown plugin option names the place and the valid keys with a suggestion") {
  CHECK_THROWS_WITH_AS(parse("[model.attention]\nname = \"local\"\nwindow = 4\nbais = false\n"),
                       doctest::Contains("exp.toml:4:1: model.attention.bais: unknown key for attention plugin "
                                         "'local' (valid keys: name, bias, window, temperature); did you mean 'bias'?"),
                       Error);
}

TEST_CASE("a plugin option of the wrong type names the place and the expected type") {
  CHECK_THROWS_WITH_AS(parse("[model.attention]\nwindow = \"wide\"\n"),
                       doctest::Contains("exp.toml:2:10: model.attention.window: expected integer for attention "
                                         "plugin 'local' option 'window' (local window size), got string"),
                       Error);
}

TEST_CASE("a missing required plugin option is named") {
  CHECK_THROWS_WITH_AS(parse("[model.attention]\nbias = false\n"),
                       doctest::Contains("model.attention: attention plugin 'local' requires option 'window'"),
                       Error);
}
