// attnlab plugins: list what the loader finds (with what each attention plugin serves), or check
// one library with the conformance kit, optionally against a reference attention plugin.
#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>

#include <fmt/core.h>
#include <fmt/format.h>

#include "attnlab/commands.h"
#include "attnlab/plugin/attention_support.h"
#include "attnlab/plugin/conformance.h"
#include "attnlab/plugin/loader.h"

namespace attnlab::app {
namespace {

std::string describe_options(const std::vector<OptionSpec>& options) {
  if (options.empty()) return "      options: none\n";
  std::string out = "      options:\n";
  for (const auto& o : options)
    out += fmt::format("        {} ({}{}): {}\n", o.name, kOptionTypeNames[static_cast<std::size_t>(o.type)],
                       o.default_value ? ", default " + option_value_str(*o.default_value) : ", required",
                       o.doc);
  return out;
}

void print_plugins(const Registry& registry) {
  for (std::size_t f = 0; f < kPluginFamilyNames.size(); ++f) {
    const auto family = static_cast<PluginFamily>(f);
    const auto plugins = registry.list(family);
    fmt::print("{} ({})\n", family_name(family), plugins.size());
    for (const auto& p : plugins) {
      fmt::print("  {} {}  {}\n      file: {}\n", p.name, p.version, p.description, p.source);
      fmt::print("{}", describe_options(p.options));
      if (family == PluginFamily::attention) {
        fmt::print("      serves:\n");
        for (const auto& d : p.capabilities.devices)
          fmt::print("        {}: {}\n", kDeviceKindNames[static_cast<std::size_t>(d.device)],
                     describe_attention_support(d));
      }
    }
  }
}

// --tolerance X: a positive number (the conformance kit's largest difference, relative to 1 + |value|).
double parse_tolerance(const std::string& text) {
  double value = 0.0;
  std::size_t used = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !(value > 0.0) || !std::isfinite(value))
    throw Error(fmt::format("--tolerance must be a positive number, e.g. 5e-2 (got '{}')", text));
  return value;
}

}  // namespace

int command_plugins(const Args& args) {
  PluginLoader loader;
  std::string check_file;
  ConformanceOptions conformance;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const bool valued = args[i] == "--path" || args[i] == "--check" || args[i] == "--reference" ||
                        args[i] == "--device" || args[i] == "--tolerance";
    if (valued && i + 1 >= args.size()) throw Error(fmt::format("{} needs a value", args[i]));
    if (args[i] == "--path") loader.add_search_path(args[++i]);
    else if (args[i] == "--check") check_file = args[++i];
    else if (args[i] == "--reference") conformance.reference = args[++i];
    else if (args[i] == "--device") conformance.device = Device::parse(args[++i]);
    else if (args[i] == "--tolerance") conformance.tolerance = parse_tolerance(args[++i]);
    else
      throw Error(fmt::format("unknown option '{}' (options: --path DIR, --check FILE [--reference ATTENTION] "
                              "[--device cpu|cuda:N] [--tolerance X])",
                              args[i]));
  }
  const auto given = [&](std::string_view option) { return std::find(args.begin(), args.end(), option) != args.end(); };
  if (check_file.empty() && (given("--reference") || given("--device") || given("--tolerance")))
    throw Error("--reference, --device and --tolerance go with --check FILE");
  Registry& registry = Registry::global();

  if (check_file.empty()) {
    loader.load_all();
    std::vector<std::string> folders;
    for (const auto& folder : loader.search_path()) folders.push_back(folder.string());
    fmt::print("search path: {}\n\n", fmt::join(folders, ":"));
    print_plugins(registry);
    for (const auto& f : loader.failures()) fmt::print(stderr, "not loaded: {}\n", f.message);
    return loader.failures().empty() ? 0 : 1;
  }

  // Load the library under test first, so its own names win; then the installed plugins for
  // what it needs around it (a dropout plugin), skipping a second copy of the same file.
  const LoadedLibrary lib = loader.load(check_file);
  fmt::print("loaded {} {} from {}\n  build id {}\n", lib.name, lib.version, lib.path, lib.build_id);
  std::vector<PluginInfo> under_test;
  for (const auto& p : registry.list())
    if (p.source == lib.path) under_test.push_back(p);
  loader.load_all();
  for (const auto& f : loader.failures()) fmt::print("note: not loaded: {}\n", f.message);
  bool all_passed = !under_test.empty();
  for (const auto& p : under_test) {
    ConformanceOptions options = conformance;
    if (p.family != PluginFamily::attention) options.reference.clear();  // references compare attention plugins
    if (!options.reference.empty()) fmt::print("{} {}: compared with reference {}\n", family_name(p.family), p.name,
                                                options.reference);
    if (options.tolerance > 0 && p.family == PluginFamily::attention)
      fmt::print("{} {}: tolerance {}\n", family_name(p.family), p.name, options.tolerance);
    const ConformanceReport report = run_conformance(registry, p.family, p.name, options);
    fmt::print("{} {} ({} checks): {}\n{}", family_name(p.family), p.name, report.checks.size(),
               report.passed() ? "PASS" : "FAIL", report.summary());
    all_passed = all_passed && report.passed();
  }
  if (under_test.empty()) fmt::print("{} registered no plugins\n", lib.path);
  return all_passed ? 0 : 1;
}

}  // namespace attnlab::app
