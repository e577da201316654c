#pragma once
// Editing parsed TOML while keeping every node's source position, so that an error about a
// resolved value still points where it was written: a suite's file, its base file, or the command
// line (--set KEY=VALUE, whose values read as TOML from a source named after the setting).
#include <string>
#include <vector>

#include <toml++/toml.h>

namespace attnlab::nmt {

// Moves `node` into `table` under `key` (replacing what was there), keeping its source position.
void put(toml::table& table, const toml::key& key, toml::node&& node);

// Deep merge: tables merge key by key, anything else in `src` replaces the value in `dst`.
void merge(toml::table& dst, toml::table&& src);

// Inserts `node` at a dotted path ("model.heads" -> [model] heads), creating tables on the way;
// the created keys carry `key_source` (where the dotted key was written).
void put_dotted(toml::table& table, const std::vector<std::string>& parts, const toml::source_region& key_source,
                toml::node&& node);

// A float as TOML reads it back, in its shortest form and always with a point or exponent (0.6,
// 1.0, 5e-04), not as toml++ writes it (0.59999999999999998).
std::string float_text(double value);

// Splits "model.heads" on dots.
std::vector<std::string> split_dotted(const std::string& key);

// The settings of the command line's --set KEY=VALUE (each given once or more; a later one wins)
// as one nested table. VALUE is TOML (0.2, true, "flash", [1, 2]); a bare word that is not TOML
// is a string (model.attention.name=flash). Every node's source is the setting itself
// ("--set model.dropout=0.2"), so errors name it: "--set model.dropout=x:1:1: model.dropout: ...".
// A setting without "=" or with an empty key throws attnlab::Error.
toml::table command_line_settings(const std::vector<std::string>& settings);

}  // namespace attnlab::nmt
