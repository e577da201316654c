// The command line's validators and shared options (cli.h).
#include "attnlab/cli.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/core.h>
#include <fmt/format.h>

#include "attnlab/device.h"
#include "attnlab/suggest.h"
#include "attnlab/nmt/experiment/experiment.h"

namespace attnlab::app {

CLI::Validator whole_number(std::int64_t min, std::int64_t max) {
  const bool unbounded = max == std::numeric_limits<std::int64_t>::max();
  const std::string accepts = unbounded ? fmt::format("a whole number >= {}", min)
                                        : fmt::format("a whole number from {} to {}", min, max);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        std::int64_t value = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec != std::errc() || end != text.data() + text.size() || text.empty() || value < min || value > max)
          return fmt::format("expects {}, got '{}'", accepts, text);
        return {};
      },
      unbounded ? fmt::format(">={}", min) : fmt::format("{}..{}", min, max));
}

CLI::Validator real_number(double min, bool min_allowed) {
  const std::string accepts = min == 0.0 && !min_allowed ? std::string("a positive number (e.g. 5e-2)")
                                                         : fmt::format("a number {} {}", min_allowed ? ">=" : ">", min);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        double value = 0.0;
        std::size_t used = 0;
        try {
          value = std::stod(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        const bool in_range = min_allowed ? value >= min : value > min;
        if (text.empty() || used != text.size() || !std::isfinite(value) || !in_range)
          return fmt::format("expects {}, got '{}'", accepts, text);
        return {};
      },
      fmt::format("{}{}", min_allowed ? ">=" : ">", min));
}

CLI::Validator device_name() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        try {
          (void)Device::parse(text);
        } catch (const std::exception& e) {
          return e.what();  // "invalid device 'gpu0' (expected cpu, cuda or cuda:N)"
        }
        return {};
      },
      "cpu|cuda|cuda:N");
}

CLI::Validator one_of(const std::string& what, std::vector<std::string> names) {
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : "|") + n;
  return CLI::Validator(
      [what, names](std::string& text) -> std::string {
        if (std::find(names.begin(), names.end(), text) != names.end()) return {};
        std::string valid;
        for (const std::string& n : names) valid += (valid.empty() ? "" : ", ") + n;
        return fmt::format("unknown {} '{}' (valid: {}){}", what, text, valid, did_you_mean(text, names));
      },
      list);
}

CLI::Option* repeated(CLI::Option* option) { return option->allow_extra_args(false); }

CLI::Option* add_device_option(CLI::App& app, std::string& device, const std::string& what) {
  return app.add_option("--device", device, what)->check(device_name())->type_name("DEVICE");
}

CLI::Option* add_plugin_path_option(CLI::App& app, std::vector<std::string>& folders) {
  return repeated(app.add_option("--plugin-path", folders, "a further folder of plugin libraries (repeatable)")
                      ->type_name("DIR"));
}

CLI::Option* add_set_option(CLI::App& app, std::vector<std::string>& settings, const std::string& over) {
  return repeated(app.add_option("--set", settings,
                                 fmt::format("change a setting over {}: model.dropout=0.2, "
                                             "model.attention.name=flash, training.lr=5e-4 (a TOML value; a plain "
                                             "word is a string); repeatable",
                                             over)))
      ->type_name("KEY=VALUE");
}

void add_beam_options(CLI::App& app, BeamFlags& flags) {
  // Unset, each comes from the run's [eval] table, whose own defaults are EvalConfig's.
  const nmt::EvalConfig d;
  app.add_option("--beam", flags.beam, fmt::format("beam size (default: the run's eval.beam, {} unless set)", d.beam))
      ->check(whole_number(1, 1000))
      ->type_name("N");
  app.add_option("--alpha", flags.alpha,
                 fmt::format("length penalty ((5 + length) / 6)^alpha (default: the run's eval.alpha, {} unless set)",
                             d.alpha))
      ->check(real_number(0.0))
      ->type_name("A");
  add_max_length_offset_option(app, flags.max_length_offset);
}

void add_max_length_offset_option(CLI::App& app, std::optional<std::int64_t>& offset) {
  app.add_option("--max-length-offset", offset,
                 fmt::format("a translation is at most source length + this (default: the run's "
                             "eval.max_length_offset, {} unless set)",
                             nmt::EvalConfig{}.max_length_offset))
      ->check(whole_number(0))
      ->type_name("N");
}

}  // namespace attnlab::app
