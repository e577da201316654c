#include "suite_toml.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include <fmt/core.h>
#include <fmt/format.h>

#include "attnlab/config/plugin_options.h"
#include "attnlab/error.h"

namespace attnlab::nmt::suite_detail {

std::string Variables::expand(const std::string& text, const std::string& where) const {
  std::vector<std::string> stack;
  return expand(text, where, stack);
}

std::string Variables::expand(const std::string& text, const std::string& where,
                              std::vector<std::string>& stack) const {
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t start = text.find("${", i);
    if (start == std::string::npos) {
      out += text.substr(i);
      break;
    }
    out += text.substr(i, start - i);
    // Find the matching brace (a default may itself hold ${...}).
    std::size_t depth = 1, j = start + 2;
    for (; j < text.size() && depth > 0; ++j) {
      if (text.compare(j, 2, "${") == 0) ++depth, ++j;
      else if (text[j] == '}') --depth;
    }
    if (depth != 0) throw Error(fmt::format("{}: unterminated '${{' in \"{}\"", where, text));
    const std::string inner = text.substr(start + 2, j - 1 - (start + 2));
    const std::size_t sep = inner.find(":-");
    const std::string name = inner.substr(0, sep);
    if (name.empty()) throw Error(fmt::format("{}: empty variable name in \"{}\"", where, text));
    if (sep == std::string::npos) {
      out += lookup(name, where, stack, nullptr);
    } else {
      const std::string fallback = inner.substr(sep + 2);
      out += lookup(name, where, stack, &fallback);
    }
    if (out.size() > kMaxExpandedBytes)
      throw Error(fmt::format("{}: \"{}\" expands to more than {} bytes (variables that repeat each other?)", where,
                              text.size() > 80 ? text.substr(0, 77) + "..." : text, kMaxExpandedBytes));
    i = j;
  }
  return out;
}

std::string Variables::lookup(const std::string& name, const std::string& where, std::vector<std::string>& stack,
                              const std::string* fallback) const {
  if (std::find(stack.begin(), stack.end(), name) != stack.end())
    throw Error(fmt::format("{}: variable '{}' refers to itself ({} -> {})", where, name, fmt::join(stack, " -> "),
                            name));
  if (auto it = vars_.find(name); it != vars_.end()) {
    if (auto done = expanded_.find(name); done != expanded_.end()) return done->second;
    stack.push_back(name);
    std::string value = expand(it->second.value, fmt::format("{}: vars.{}", it->second.position, name), stack);
    stack.pop_back();
    return expanded_.emplace(name, std::move(value)).first->second;
  }
  if (const char* env = std::getenv(name.c_str())) return from_env_[name] = env;
  if (fallback) return expand(*fallback, where, stack);
  std::vector<std::string> names;
  for (const auto& [n, e] : vars_) names.push_back(n);
  throw Error(fmt::format("{}: undefined variable '{}' (define it in [vars] or the environment{}){}", where, name,
                          names.empty() ? "" : fmt::format("; [vars] has: {}", fmt::join(names, ", ")),
                          did_you_mean(name, names)));
}

void Variables::expand_all(toml::node& node, const std::string& path) const {
  if (auto* s = node.as_string()) {
    if (s->get().find("${") != std::string::npos)
      s->get() = expand(s->get(), fmt::format("{}: {}", config::source_position(s->source()), path));
  } else if (auto* t = node.as_table()) {
    for (auto&& [k, v] : *t) expand_all(v, path.empty() ? std::string(k.str()) : path + "." + std::string(k.str()));
  } else if (auto* a = node.as_array()) {
    for (std::size_t i = 0; i < a->size(); ++i) expand_all(*a->get(i), fmt::format("{}[{}]", path, i));
  }
}

std::string value_text(const toml::node& node) {
  if (auto s = node.value_exact<std::string>()) return *s;
  if (auto d = node.value_exact<double>()) return float_text(*d);
  std::ostringstream out;
  node.visit([&](const auto& v) { out << v; });
  return out.str();
}

void flatten(const toml::table& table, const std::string& prefix,
             std::vector<std::pair<std::string, const toml::node*>>& out) {
  std::vector<std::pair<std::string, const toml::node*>> here;
  for (const auto& [k, v] : table) {
    const std::string key = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
    if (auto* t = v.as_table()) flatten(*t, key, here);
    else here.emplace_back(key, &v);
  }
  std::stable_sort(here.begin(), here.end(), [](const auto& a, const auto& b) {
    const auto& x = a.second->source().begin;
    const auto& y = b.second->source().begin;
    return std::pair(x.line, x.column) < std::pair(y.line, y.column);
  });
  out.insert(out.end(), here.begin(), here.end());
}

}  // namespace attnlab::nmt::suite_detail
