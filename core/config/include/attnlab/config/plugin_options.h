#pragma once
// Validation of a plugin's table in an experiment file against the options the plugin declares.
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "attnlab/plugin/options.h"
#include "attnlab/suggest.h"

namespace attnlab::config {

// `table` is the plugin's table (e.g. [model.attention]); `where` its dotted key for messages;
// keys listed in `reserved` belong to the experiment (e.g. "name") and are skipped. Every other
// key must be a declared option of the right type; required options must be present. Errors
// name file:line:column, the key, and the valid keys (with a suggestion for a near miss).
Options plugin_options_from_toml(const std::vector<OptionSpec>& specs, const toml::table& table,
                                 const std::string& where, const std::string& plugin,
                                 const std::vector<std::string>& reserved = {"name"});

// "file:line:column" of a node (or of its table when the node has no source).
std::string source_position(const toml::source_region& region);
// A value's TOML type ("integer", "float", "string", ...), and the value after it as TOML writes it
// ("string 'eight'", "float 1.5"; long values shortened): what a type error says it got.
std::string_view toml_type_name(const toml::node& node);
std::string value_with_type(const toml::node& node);

// The closest of `candidates` to `word` when it is a plausible typo, else empty (attnlab/suggest.h).
using attnlab::suggest;

}  // namespace attnlab::config
