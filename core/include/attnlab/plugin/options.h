#pragma once
// Plugin options: each plugin declares the options it accepts (name, type, default, one-line
// doc); an experiment's table for the plugin is validated against that declaration.
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace attnlab {

enum class OptionType : std::uint8_t { boolean, integer, real, string };
inline constexpr std::array<std::string_view, 4> kOptionTypeNames = {"boolean", "integer", "float",
                                                                    "string"};
static_assert(kOptionTypeNames.size() == static_cast<std::size_t>(OptionType::string) + 1);

using OptionValue = std::variant<bool, std::int64_t, double, std::string>;

struct OptionSpec {
  std::string name;
  OptionType type = OptionType::real;
  std::optional<OptionValue> default_value;  // none: the option is required
  std::string doc;
};

std::string option_value_str(const OptionValue& value);  // as TOML would write it

// Validated option values of one plugin instance: every declared option has a value.
class Options {
 public:
  Options() = default;
  // Fills declared defaults; throws an Error naming a required option that has no value.
  static Options with_defaults(const std::vector<OptionSpec>& specs,
                               std::map<std::string, OptionValue> given = {});
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  bool get_bool(const std::string& name) const;
  std::int64_t get_int(const std::string& name) const;
  double get_real(const std::string& name) const;  // integers are accepted too
  const std::string& get_string(const std::string& name) const;
  const std::map<std::string, OptionValue>& values() const { return values_; }

 private:
  const OptionValue& at(const std::string& name) const;
  std::map<std::string, OptionValue> values_;
};

}  // namespace attnlab
