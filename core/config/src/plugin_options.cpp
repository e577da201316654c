#include "attnlab/config/plugin_options.h"

#include <algorithm>
#include <sstream>

#include "attnlab/error.h"

namespace attnlab::config {
namespace {

std::optional<OptionValue> convert(const toml::node& node, OptionType type) {
  switch (type) {
    case OptionType::boolean:
      if (auto v = node.value_exact<bool>()) return OptionValue(*v);
      break;
    case OptionType::integer:
      if (auto v = node.value_exact<std::int64_t>()) return OptionValue(*v);
      break;
    case OptionType::real:
      if (auto v = node.value_exact<double>()) return OptionValue(*v);
      if (auto v = node.value_exact<std::int64_t>()) return OptionValue(static_cast<double>(*v));
      break;
    case OptionType::string:
      if (auto v = node.value_exact<std::string>()) return OptionValue(*v);
      break;
  }
  return std::nullopt;
}

}  // namespace

std::string_view toml_type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::boolean: return "boolean";
    case toml::node_type::integer: return "integer";
    case toml::node_type::floating_point: return "float";
    case toml::node_type::string: return "string";
    case toml::node_type::table: return "table";
    case toml::node_type::array: return "array";
    default: return "date/time";
  }
}

std::string value_with_type(const toml::node& node) {
  std::ostringstream text;
  node.visit([&](const auto& v) { text << v; });
  std::string shown = text.str();
  if (shown.size() > 40) shown = shown.substr(0, 37) + "...";
  return fmt::format("{} {}", toml_type_name(node), shown);
}

std::string source_position(const toml::source_region& region) {
  const std::string path = region.path ? std::string(*region.path) : std::string("<toml>");
  return fmt::format("{}:{}:{}", path, region.begin.line, region.begin.column);
}

Options plugin_options_from_toml(const std::vector<OptionSpec>& specs, const toml::table& table,
                                 const std::string& where, const std::string& plugin,
                                 const std::vector<std::string>& reserved) {
  std::vector<std::string> valid = reserved;
  for (const auto& s : specs) valid.push_back(s.name);
  std::map<std::string, OptionValue> given;
  for (const auto& [key, node] : table) {
    const std::string name(key.str());
    if (std::find(reserved.begin(), reserved.end(), name) != reserved.end()) continue;
    auto spec = std::find_if(specs.begin(), specs.end(), [&](const OptionSpec& s) { return s.name == name; });
    if (spec == specs.end()) {
      throw Error(fmt::format("{}: {}.{}: unknown key for {} (valid keys: {}){}", source_position(key.source()),
                              where, name, plugin, fmt::join(valid, ", "), did_you_mean(name, valid)));
    }
    auto value = convert(node, spec->type);
    if (!value)
      throw Error(fmt::format("{}: {}.{}: expected {} for {} option '{}' ({}), got {}",
                              source_position(node.source()), where, name,
                              kOptionTypeNames[static_cast<std::size_t>(spec->type)], plugin, name, spec->doc,
                              toml_type_name(node)));
    given[name] = *value;
  }
  for (const auto& s : specs)
    if (!s.default_value && !given.count(s.name))
      throw Error(fmt::format("{}: {}: {} requires option '{}' ({}); valid keys: {}",
                              source_position(table.source()), where, plugin, s.name, s.doc,
                              fmt::join(valid, ", ")));
  return Options::with_defaults(specs, std::move(given));
}

}  // namespace attnlab::config
