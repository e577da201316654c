#pragma once
// A closed set of choices named in configuration files (an enum class): one table of (value, name)
// pairs from which the parsing of a name, the name written out and the message listing the valid
// names all come, so that they cannot disagree.
//
//   enum class Color { red, green };
//   inline constexpr auto kColors = name_table<Color>({{Color::red, "red"}, {Color::green, "green"}});
//   kColors.name(Color::green) == "green"; kColors.find("blue") == std::nullopt;
//   kColors.unknown("blue") == "expected one of red, green, got \"blue\"".
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "attnlab/error.h"

namespace attnlab {

template <typename E, std::size_t N>
struct NameTable {
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

  // What is said of a name that is not in the table: `expected one of a, b, c, got "x"`.
  std::string unknown(std::string_view got) const {
    return "expected one of " + names() + ", got \"" + std::string(got) + "\"";
  }

  // The value called `name`; an Error saying unknown(name) otherwise.
  E parse(std::string_view name) const {
    if (auto v = find(name)) return *v;
    throw Error(unknown(name));
  }

  constexpr auto begin() const { return entries.begin(); }
  constexpr auto end() const { return entries.end(); }
};

// A table from its pairs, its size counted: name_table<Color>({{Color::red, "red"}, ...}).
template <typename E, std::size_t N>
constexpr NameTable<E, N> name_table(const std::pair<E, std::string_view> (&entries)[N]) {
  NameTable<E, N> table{};
  for (std::size_t i = 0; i < N; ++i) table.entries[i] = entries[i];
  return table;
}

}  // namespace attnlab
