#include "attnlab/nmt/experiment/toml_edit.h"

#include <algorithm>

#include <fmt/format.h>

#include "attnlab/error.h"

namespace attnlab::nmt {

void put(toml::table& table, const toml::key& key, toml::node&& node) {
  std::move(node).visit([&](auto&& concrete) { table.insert_or_assign(toml::key(key), std::move(concrete)); });
}

void merge(toml::table& dst, toml::table&& src) {
  for (auto&& [k, v] : src) {
    if (auto* from = v.as_table()) {
      if (auto* to = dst.get_as<toml::table>(k.str())) {
        merge(*to, std::move(*from));
        continue;
      }
    }
    put(dst, k, std::move(v));
  }
}

void put_dotted(toml::table& table, const std::vector<std::string>& parts, const toml::source_region& key_source,
                toml::node&& node) {
  toml::table* at = &table;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    toml::table* next = at->get_as<toml::table>(parts[i]);
    if (!next) {
      // Created keys carry the override's position, so errors about them point at it.
      at->insert_or_assign(toml::key(parts[i], key_source), toml::table{});
      next = at->get_as<toml::table>(parts[i]);
    }
    at = next;
  }
  const toml::key last(parts.back(), key_source);
  if (auto* from = node.as_table()) {
    if (auto* to = at->get_as<toml::table>(parts.back())) {
      merge(*to, std::move(*from));
      return;
    }
  }
  put(*at, last, std::move(node));
}

std::string float_text(double value) {
  std::string text = fmt::format("{}", value);
  if (text.find_first_of(".eEn") == std::string::npos) text += ".0";
  return text;
}

std::vector<std::string> split_dotted(const std::string& key) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = key.find('.', start);
    parts.push_back(key.substr(start, dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return parts;
}

toml::table command_line_settings(const std::vector<std::string>& settings) {
  toml::table out;
  for (const std::string& setting : settings) {
    const std::size_t eq = setting.find('=');
    const std::string key = setting.substr(0, eq);
    const std::vector<std::string> parts = split_dotted(key);
    const bool bad_key = eq == std::string::npos || key.empty() ||
                         std::any_of(parts.begin(), parts.end(), [](const std::string& p) { return p.empty(); });
    if (bad_key)
      throw Error(fmt::format("--set: expects KEY=VALUE with a dotted key (model.dropout=0.2), got '{}'", setting));
    const std::string value = setting.substr(eq + 1), source = "--set " + setting;
    // The value as TOML, else (a bare word) as a string; either way parsed, so it has a position.
    toml::table parsed;
    try {
      parsed = toml::parse("v = " + value, source);
    } catch (const toml::parse_error&) {
    }
    if (parsed.size() != 1 || !parsed.contains("v")) {
      std::string quoted = "\"";
      for (char c : value) quoted += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
      try {
        parsed = toml::parse("v = " + quoted + "\"", source);
      } catch (const toml::parse_error& e) {
        throw Error(fmt::format("{}: the value is neither TOML nor a plain string: {}", source, e.description()));
      }
    }
    toml::node& node = *parsed.get("v");
    const toml::source_region where = node.source();
    put_dotted(out, parts, where, std::move(node));
  }
  return out;
}

}  // namespace attnlab::nmt
