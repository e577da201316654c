#include "attnlab/plugin/options.h"

#include "attnlab/error.h"

namespace attnlab {

std::string option_value_str(const OptionValue& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, bool>) return v ? "true" : "false";
        else if constexpr (std::is_same_v<V, std::string>) return fmt::format("\"{}\"", v);
        else return fmt::format("{}", v);
      },
      value);
}

Options Options::with_defaults(const std::vector<OptionSpec>& specs,
                               std::map<std::string, OptionValue> given) {
  Options out;
  for (const auto& spec : specs) {
    auto it = given.find(spec.name);
    if (it != given.end()) {
      out.values_[spec.name] = it->second;
    } else {
      ATTNLAB_CHECK(spec.default_value.has_value(), "option '{}' is required ({})", spec.name, spec.doc);
      out.values_[spec.name] = *spec.default_value;
    }
  }
  for (const auto& [name, value] : given) {
    if (out.values_.count(name)) continue;
    std::vector<std::string> valid;
    for (const auto& spec : specs) valid.push_back(spec.name);
    throw Error(fmt::format("unknown option '{}' (valid options: {})", name,
                            valid.empty() ? std::string("none") : fmt::format("{}", fmt::join(valid, ", "))));
  }
  return out;
}

const OptionValue& Options::at(const std::string& name) const {
  auto it = values_.find(name);
  ATTNLAB_CHECK(it != values_.end(), "option '{}' has no value", name);
  return it->second;
}

bool Options::get_bool(const std::string& name) const {
  const auto* v = std::get_if<bool>(&at(name));
  ATTNLAB_CHECK(v, "option '{}' is not a boolean", name);
  return *v;
}

std::int64_t Options::get_int(const std::string& name) const {
  const auto* v = std::get_if<std::int64_t>(&at(name));
  ATTNLAB_CHECK(v, "option '{}' is not an integer", name);
  return *v;
}

double Options::get_real(const std::string& name) const {
  const auto& value = at(name);
  if (const auto* i = std::get_if<std::int64_t>(&value)) return static_cast<double>(*i);
  const auto* v = std::get_if<double>(&value);
  ATTNLAB_CHECK(v, "option '{}' is not a number", name);
  return *v;
}

const std::string& Options::get_string(const std::string& name) const {
  const auto* v = std::get_if<std::string>(&at(name));
  ATTNLAB_CHECK(v, "option '{}' is not a string", name);
  return *v;
}

}  // namespace attnlab
