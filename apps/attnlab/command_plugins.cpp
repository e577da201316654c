// attnlab plugins: list what the loader finds (with what each attention plugin serves), or check
// one library with the conformance kit, optionally against a reference attention plugin.
#include <algorithm>
#include <memory>
#include <string>
#include <string_view>

#include <fmt/core.h>
#include <fmt/format.h>

#include "attnlab/commands.h"
#include "attnlab/device.h"
#include "attnlab/error.h"
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

// The plugin's kernel report for each device of the entry's kind that this machine has.
void print_kernels(const AttentionDeviceSupport& d) {
  if (!d.kernels) return;
  const int count = d.device == DeviceKind::cuda ? cuda_device_count() : 1;
  for (int i = 0; i < count; ++i) {
    const Device device{d.device, i};
    try {
      fmt::print("          {} ({}): {}\n", device.str(), describe_device(device), d.kernels(i));
    } catch (const Error& e) {  // a GPU this build has no kernels for, say
      fmt::print("          {}: {}\n", device.str(), e.what());
    }
  }
}

void print_plugins(const Registry& registry) {
  for (const auto& [family, family_text] : kPluginFamilies) {
    const auto plugins = registry.list(family);
    fmt::print("{} ({})\n", family_text, plugins.size());
    for (const auto& p : plugins) {
      fmt::print("  {} {}  {}\n      file: {}\n", p.name, p.version, p.description, p.source);
      fmt::print("{}", describe_options(p.options));
      if (family == PluginFamily::attention) {
        fmt::print("      serves:\n");
        for (const auto& d : p.capabilities.devices) {
          fmt::print("        {}: {}\n", device_kind_name(d.device),
                     describe_attention_support(d));
          print_kernels(d);
        }
      }
      if (family == PluginFamily::positional && p.positions.any())
        fmt::print("      inside self-attention: {} (the attention plugin must apply them)\n", p.positions.describe());
    }
  }
}

}  // namespace

int run_plugins(const std::vector<std::string>& paths, const std::string& check_file,
                const ConformanceOptions& conformance);

Command plugins_command(CLI::App& root) {
  struct Flags {
    std::vector<std::string> paths;
    std::string check_file, device = "cpu";
    ConformanceOptions conformance;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* app = root.add_subcommand(
      "plugins", "list every plugin found (family, name, version, file, description, options, and what each "
                 "attention plugin serves); --check FILE runs the conformance kit on one plugin library");
  repeated(app->add_option("--path", f->paths, "a further folder to search (repeatable)"))->type_name("DIR");
  auto* check = app->add_option("--check", f->check_file, "load this plugin library and run the conformance kit on it")
                    ->type_name("FILE");
  app->add_option("--reference", f->conformance.reference,
                  "also compare the attention plugin with this one (e.g. scaled_dot), built with the same seed")
      ->type_name("ATTENTION")
      ->needs(check);
  add_device_option(*app, f->device, "the device the checks run on")->needs(check);
  app->add_option("--tolerance", f->conformance.tolerance,
                  "the attention checks' largest difference, relative to 1 + |value| (default: the dtype's)")
      ->check(real_number(0.0, false))
      ->type_name("X")
      ->needs(check);
  return {app, [f] {
            ConformanceOptions conformance = f->conformance;
            conformance.device = Device::parse(f->device);
            return run_plugins(f->paths, f->check_file, conformance);
          }};
}

int run_plugins(const std::vector<std::string>& paths, const std::string& check_file,
                const ConformanceOptions& conformance) {
  PluginLoader loader;
  for (const auto& p : paths) loader.add_search_path(p);
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
