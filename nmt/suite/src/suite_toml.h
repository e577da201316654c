#pragma once
// TOML helpers of the suite reader (suite.cpp): variable substitution and table merging that keep
// every node's source position, so errors in a resolved row still point into the file it came from.
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "attnlab/nmt/experiment/toml_edit.h"

namespace attnlab::nmt::suite_detail {

// ${name} and ${name:-default} substitution. A name is looked up in `vars` (whose values may use
// other variables), then in the environment; an unknown name without a default is an error, and
// so is an expansion longer than kMaxExpandedBytes (variables that repeat each other double it at
// every level).
class Variables {
 public:
  static constexpr std::size_t kMaxExpandedBytes = std::size_t{64} << 10;
  struct Entry {
    std::string value;
    std::string position;  // file:line:column of the definition
  };
  // The variables read from the environment so far, with their values.
  const std::map<std::string, std::string>& from_environment() const { return from_env_; }
  void define(const std::string& name, Entry entry) {
    vars_[name] = std::move(entry);
    expanded_.clear();
  }
  // Expands `text`; `where` ("file:line:column: key") prefixes errors.
  std::string expand(const std::string& text, const std::string& where) const;
  // Expands every string value under `node` in place; `path` is the node's dotted key.
  void expand_all(toml::node& node, const std::string& path) const;

 private:
  std::string expand(const std::string& text, const std::string& where, std::vector<std::string>& stack) const;
  std::string lookup(const std::string& name, const std::string& where, std::vector<std::string>& stack,
                     const std::string* fallback) const;
  std::map<std::string, Entry> vars_;
  mutable std::map<std::string, std::string> from_env_;
  // Each variable's expanded value, once computed: a name used many times, or by many variables,
  // is expanded once (without this, a chain of variables that each use the next one twice takes
  // time exponential in its length even when every value is empty).
  mutable std::map<std::string, std::string> expanded_;
};

// put, merge, put_dotted and split_dotted: attnlab/nmt/experiment/toml_edit.h.
using nmt::float_text;
using nmt::merge;
using nmt::put;
using nmt::put_dotted;
using nmt::split_dotted;

// The value as written for reports: strings without quotes, numbers and booleans as TOML writes them.
std::string value_text(const toml::node& node);

// Every leaf under `table` as (dotted key, node), in source order.
void flatten(const toml::table& table, const std::string& prefix,
             std::vector<std::pair<std::string, const toml::node*>>& out);

}  // namespace attnlab::nmt::suite_detail
