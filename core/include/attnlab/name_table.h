#pragma once
// A closed set of choices read from a configuration file, a JSON file or the command line (an
// enum class): one table of (value, name) pairs from which the parsing of a name, the name written
// out and the message for an unknown name all come, so that they cannot disagree.
//
//   enum class Color { red, green };
//   inline constexpr auto kColors = name_table<Color>("color", {{Color::red, "red"}, {Color::green, "green"}});
//   kColors.name(Color::green) == "green"; kColors.find("blue") == std::nullopt;
//   kColors.unknown("blue") == "unknown color 'blue' (valid: red, green)";
//   kColors.unknown("gren") == "unknown color 'gren' (valid: red, green); did you mean 'green'?".
//
// name_table is evaluated at compile time and refuses (does not compile) a table that misses a
// value of the enum, names one twice or gives two values one name: adding a value to an enum
// without naming it is a compile error. The enum's values must lie in 0 .. 63.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attnlab/suggest.h"

namespace attnlab {

// Throws attnlab::Error(message) (attnlab/error.h; declared here, so that this header needs no fmt).
[[noreturn]] void throw_error(std::string message);

namespace detail {

// Whether V is one of its enum's named values: the compiler spells a named value by its name in
// the function's signature (gcc: "[with auto V = ns::Color::red]"; clang: "[V = ns::Color::red]")
// and any other as a cast ("(ns::Color)7").
template <auto V>
consteval bool is_enumerator() {
  const std::string_view signature = __PRETTY_FUNCTION__;
  const std::string_view value = signature.substr(signature.rfind("V = ") + 4);
  const std::size_t close = value.rfind(')');
  if (close == std::string_view::npos) return true;
  const std::string_view tail = value.substr(close + 1);  // "7]" after a cast, "::Color::red]" else
  return !(tail.size() >= 2 && ((tail[0] >= '0' && tail[0] <= '9') || tail[0] == '-'));
}

template <typename E, std::size_t... I>
consteval std::uint64_t enumerator_bits(std::index_sequence<I...>) {
  return (std::uint64_t{0} | ... | (is_enumerator<static_cast<E>(I)>() ? std::uint64_t{1} << I : 0));
}

// Bit i set for each named value i of E in 0 .. 63.
template <typename E>
consteval std::uint64_t enumerator_mask() {
  return enumerator_bits<E>(std::make_index_sequence<64>{});
}

}  // namespace detail

template <typename E, std::size_t N>
struct NameTable {
  std::string_view what;  // what the names name, for messages: "search method"
  std::array<std::pair<E, std::string_view>, N> entries;

  // The name of `value`; empty for a value the table lacks.
  constexpr std::string_view name(E value) const {
    for (const auto& [v, n] : entries)
      if (v == value) return n;
    return {};
  }

  // The value called `name`, or nothing.
  constexpr std::optional<E> find(std::string_view name) const {
    for (const auto& [v, n] : entries)
      if (n == name) return v;
    return std::nullopt;
  }

  // The valid names in the table's order: "a, b, c".
  std::string names() const {
    std::string out;
    for (const auto& [v, n] : entries) {
      if (!out.empty()) out += ", ";
      out += n;
    }
    return out;
  }

  // What is said of a name that is not in the table, the one wording for every choice:
  // "unknown color 'blue' (valid: red, green)".
  // A name close to one of the table's gets "; did you mean 'red'?" (attnlab/suggest.h).
  std::string unknown(std::string_view got) const {
    std::vector<std::string> valid;
    for (const auto& [v, n] : entries) valid.emplace_back(n);
    return "unknown " + std::string(what) + " '" + std::string(got) + "' (valid: " + names() + ")" +
           did_you_mean(std::string(got), valid);
  }

  // The value called `name`; an Error saying unknown(name) otherwise.
  E parse(std::string_view name) const {
    if (auto v = find(name)) return *v;
    throw_error(unknown(name));
  }

  constexpr auto begin() const { return entries.begin(); }
  constexpr auto end() const { return entries.end(); }
};

// A table from what it names and its pairs, checked at compile time (see the top of this file).
template <typename E, std::size_t N>
consteval NameTable<E, N> name_table(std::string_view what, const std::pair<E, std::string_view> (&entries)[N]) {
  constexpr std::uint64_t values = detail::enumerator_mask<E>();
  NameTable<E, N> table{what, {}};
  std::uint64_t named = 0;
  for (std::size_t i = 0; i < N; ++i) {
    table.entries[i] = entries[i];
    const auto v = static_cast<std::uint64_t>(entries[i].first);
    if (v >= 64 || !(values >> v & 1)) throw "name_table: a value that is not one of the enum's";
    if (named >> v & 1) throw "name_table: a value named twice";
    named |= std::uint64_t{1} << v;
    if (entries[i].second.empty()) throw "name_table: an empty name";
    for (std::size_t j = 0; j < i; ++j)
      if (entries[j].second == entries[i].second) throw "name_table: two values with one name";
  }
  if (named != values) throw "name_table: the table does not name every value of the enum";
  return table;
}

}  // namespace attnlab
