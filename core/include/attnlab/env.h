#pragma once
// The environment variables attnlab reads, in one table (env.cpp), and one rule for each kind:
//   a switch is on for 1, true, yes or on and off when unset or set to "", 0, false, no or off
//   (any case); any other text is an error naming the variable and the accepted spellings;
//   a value is its text, absent when unset or "".
// Every reader names a variable of the table (a name outside it is a programming error, refused),
// so the table is the complete list: `attnlab version --verbose` prints those set, and each run's
// manifest.json records the set ones that change the numbers a run computes.
// Plain C++ (no fmt): CUDA sources include it.
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attnlab::env {

enum class Kind { flag, value };

struct Variable {
  std::string_view name;
  Kind kind;
  bool numerics;  // setting it changes the numbers a run computes (kernels, precision, operands)
  std::string_view what;
};

// Every variable attnlab reads, in the order the docs list them.
std::span<const Variable> variables();

// A switch of the table (Kind::flag), read now by the rule above.
bool flag(std::string_view name);

// A value of the table (Kind::value), read now; nullopt when unset or "".
std::optional<std::string> value(std::string_view name);

// The variables of the table that are set now, with their text, in the table's order; with
// numerics_only, only those that change a run's numbers (a switch set to an "off" spelling is
// still listed: it was set).
std::vector<std::pair<std::string, std::string>> set_now(bool numerics_only);

}  // namespace attnlab::env
