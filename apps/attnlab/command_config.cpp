// attnlab config FILE [--set KEY=VALUE ...] [--row NAME]: the resolved configuration of an
// experiment (or of one row of a suite) as TOML, every default filled in, each value followed by
// where it came from: the file and line that set it, the command line's --set, or "default".
// attnlab config --keys [--format text|markdown]: every key an experiment or suite file takes, with
// its type, default and meaning (experiment_keys.h, suite_keys.h).
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "attnlab/commands.h"
#include "attnlab/config/plugin_options.h"
#include "attnlab/error.h"
#include "attnlab/nmt/experiment/experiment.h"
#include "attnlab/nmt/experiment/experiment_keys.h"
#include "attnlab/nmt/experiment/toml_edit.h"
#include "attnlab/nmt/suite/suite.h"
#include "attnlab/nmt/suite/suite_keys.h"

namespace attnlab::app {
namespace {

struct ConfigFlags {
  std::string file, row, format = "text";
  std::vector<std::string> settings;
  bool keys = false;
};

// Where the value at `parts` of the document was written: the node's own position, or that of the
// nearest value above it (a plugin given as a plain name, `attention = "flash"`, sets the table's
// keys); "default" when nothing on the path was written.
std::string source_of(const toml::table* doc, const std::vector<std::string>& parts) {
  const toml::node* at = doc;
  for (const std::string& part : parts) {
    const toml::table* t = at ? at->as_table() : nullptr;
    if (!t) break;  // a value above the key: it set this one
    at = t->get(part);
    if (!at) return "default";
  }
  if (!at || !at->source().begin) return "default";
  return config::source_position(at->source());
}

// As TOML writes it, but a float in its shortest form that reads back (0.6, not 0.59999999999999998).
std::string value_text(const toml::node& node) {
  if (auto d = node.value_exact<double>()) return nmt::float_text(*d);
  std::ostringstream out;
  node.visit([&](const auto& v) { out << v; });
  return out.str();
}

// The table's plain values as `key = value  # source`, then its tables, each under its header.
void print_table(const toml::table& resolved, const toml::table* doc, std::vector<std::string>& path) {
  std::vector<std::pair<std::string, const toml::table*>> tables;
  for (const auto& [key, node] : resolved) {
    path.push_back(std::string(key.str()));
    if (const toml::table* t = node.as_table()) {
      tables.emplace_back(std::string(key.str()), t);
    } else {
      fmt::print("{} = {}  # {}\n", key.str(), value_text(node), source_of(doc, path));
    }
    path.pop_back();
  }
  for (const auto& [key, t] : tables) {
    path.push_back(key);
    std::string header;
    for (const auto& p : path) header += (header.empty() ? "" : ".") + p;
    fmt::print("\n[{}]\n", header);
    print_table(*t, doc, path);
    path.pop_back();
  }
}

int run_config(const ConfigFlags& f) {
  if (f.keys) {
    if (!f.file.empty()) throw Error("--keys lists the keys of every experiment file: give no FILE with it");
    const bool md = f.format == "markdown";
    fmt::print("{}Experiment files (a suite's [base] and its rows take the same keys)\n\n{}", md ? "## " : "",
               nmt::render_experiment_keys(nmt::experiment_keys(), md));
    fmt::print("\n{}Suite files: their own tables\n\n{}", md ? "## " : "",
               nmt::render_experiment_keys(nmt::suite_keys(), md));
    return 0;
  }
  if (f.file.empty()) throw Error("give the experiment's or suite's FILE (or --keys for the keys of every one)");
  const nmt::Suite suite = nmt::load_suite(f.file, f.settings);
  const nmt::SuiteRow* row = &suite.rows.front();
  if (!f.row.empty()) {
    row = nullptr;
    std::string names;
    for (const auto& r : suite.rows) {
      if (r.name == f.row && !row) row = &r;
      names += (names.empty() ? "" : ", ") + r.name;
    }
    if (!row) throw Error(fmt::format("--row: {} has no row '{}' (rows: {})", f.file, f.row, names));
  }
  fmt::print("# {}: {}{}, resolved; after each value, where it was set\n", f.file,
             suite.rows.size() > 1 ? "row " + row->name : "the experiment",
             f.settings.empty() ? "" : " with " + std::to_string(f.settings.size()) + " --set");
  const toml::table resolved = nmt::parse_toml_text(nmt::to_toml(row->config), "resolved");
  std::vector<std::string> path;
  print_table(resolved, row->config.document.get(), path);
  return 0;
}

}  // namespace

Command config_command(CLI::App& root) {
  auto f = std::make_shared<ConfigFlags>();
  CLI::App* app = root.add_subcommand(
      "config", "the resolved configuration of an experiment (or of a suite's row) as TOML, every default filled in, "
                "each value followed by the file and line (or --set) that set it, or 'default'");
  app->add_option("FILE", f->file, "an experiment's or a suite's TOML file");
  add_set_option(*app, f->settings, "the file's (a suite's: the base of every row)");
  app->add_option("--row", f->row, "the suite's row to show (default: its first, the base row)")->type_name("NAME");
  app->add_flag("--keys", f->keys,
                "list every key an experiment file takes (a suite's [base] and rows take the same) and those of a "
                "suite file's own tables, with type, default and meaning, instead of a file's configuration");
  app->add_option("--format", f->format, "of --keys: an aligned list, or a Markdown table (docs/keys.md)")
      ->check(one_of("format", {"text", "markdown"}));
  return {app, [f] { return run_config(*f); }};
}

}  // namespace attnlab::app
