// attnlab check SUITE.toml (or one experiment's TOML): resolves and validates every row of a suite
// (plugins, options, shapes, score expressions, whether the attention plugin serves the row or its
// fallback does), prints one line per row with its dimensions, attention plugin and parameter count
// (beside the paper's, when the row has one), one note per row served by a fallback, the score
// expressions with their tensors and compiled kernels, and lists data files that do not exist and rows
// whose device this machine lacks. With --format csv only the table goes to standard output (the
// rest to standard error). Exit status: 0 valid and runnable here, 3 valid but not runnable here
// (data missing, no such device), 1 errors.
#include <cstdio>
#include <filesystem>
#include <algorithm>
#include <memory>

#include <fmt/core.h>
#include <fmt/format.h>

#include "attnlab/commands.h"
#include "attnlab/error.h"
#include "attnlab/suggest.h"
#include "attnlab/nmt/model/parameter_count.h"
#include "attnlab/nmt/suite/machine_share.h"
#include "attnlab/nmt/suite/suite.h"
#include "attnlab/threads.h"
#include "attnlab/device.h"
#include "check_expressions.h"

namespace attnlab::app {
namespace {

// What the suite's [search] will train: its rungs, and the steps of synchronous halving (each rung
// keeping the best floor(n / eta), at least one) against the exhaustive grid's. The asynchronous
// rule promotes a few more rows, since it decides before every row has arrived.
void print_search_plan(const nmt::Suite& suite, std::FILE* out) {
  const nmt::SearchSpec& s = *suite.search;
  const std::vector<std::int64_t> rungs = nmt::search_rungs(s);
  std::int64_t runs = 0;
  for (const auto& row : suite.rows) runs += row.skipped.empty() && row.same_as.empty();
  std::int64_t steps = 0, n = runs;
  for (std::size_t k = 0; k < rungs.size(); ++k) {
    const std::int64_t next = k + 1 < rungs.size() ? std::max<std::int64_t>(n / s.eta, n > 0 ? 1 : 0) : 0;
    steps += (n - next) * rungs[k];
    n = next;
  }
  fmt::print(out, "search: successive halving by {} ({} is better), eta {}, rungs {} steps; {} runs: about {} "
             "training steps ({:.0f} % of the exhaustive grid's {})\n",
             nmt::search_metric_name(s.metric), nmt::higher_is_better(s.metric) ? "higher" : "lower", s.eta,
             fmt::join(rungs, ", "), runs, steps, runs > 0 ? 100.0 * steps / (runs * s.max_steps) : 0.0,
             runs * s.max_steps);
}

std::string number(double v) {
  std::string s = fmt::format("{:g}", v);
  return s;
}

enum class TableFormat { text, markdown, csv };
constexpr auto kTableFormats = name_table<TableFormat>(
    "table format", {{TableFormat::text, "text"}, {TableFormat::markdown, "markdown"}, {TableFormat::csv, "csv"}});

void print_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                 TableFormat format) {
  if (format == TableFormat::csv) {
    auto field = [](const std::string& s) {
      if (s.find_first_of(",\"") == std::string::npos) return s;
      std::string q = "\"";
      for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
      return q + "\"";
    };
    auto line = [&](const std::vector<std::string>& cells) {
      std::vector<std::string> f;
      for (const auto& c : cells) f.push_back(field(c));
      fmt::print("{}\n", fmt::join(f, ","));
    };
    line(header);
    for (const auto& r : rows) line(r);
    return;
  }
  std::vector<std::size_t> width(header.size());
  for (std::size_t i = 0; i < header.size(); ++i) width[i] = header[i].size();
  for (const auto& r : rows)
    for (std::size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  const bool md = format == TableFormat::markdown;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out = md ? "| " : "";
    for (std::size_t i = 0; i < cells.size(); ++i) {
      out += fmt::format("{:<{}}", cells[i], width[i]);
      if (i + 1 < cells.size()) out += md ? " | " : "  ";
    }
    out += md ? " |" : "";
    while (!md && !out.empty() && out.back() == ' ') out.pop_back();
    fmt::print("{}\n", out);
  };
  line(header);
  if (md) {
    std::vector<std::string> dashes;
    for (std::size_t w : width) dashes.push_back(std::string(std::max<std::size_t>(w, 3), '-'));
    line(dashes);
  }
  for (const auto& r : rows) line(r);
}

// Keeps the rows named in `names` (each seed of each), refusing a name the suite does not have.
void keep_rows(nmt::Suite& suite, const std::vector<std::string>& names) {
  std::vector<std::string> all;
  for (const auto& row : suite.rows)
    if (std::find(all.begin(), all.end(), row.name) == all.end()) all.push_back(row.name);
  for (const auto& name : names)
    if (std::find(all.begin(), all.end(), name) == all.end()) {
      throw Error(fmt::format("--rows: suite {} has no row '{}' (valid: {}){}", suite.name, name, fmt::join(all, ", "),
                              did_you_mean(name, all)));
    }
  std::erase_if(suite.rows, [&](const nmt::SuiteRow& row) {
    return std::find(names.begin(), names.end(), row.name) == names.end();
  });
}

}  // namespace

struct CheckFlags {
  std::string file, format = "text";
  std::vector<std::string> settings;  // --set KEY=VALUE
  std::vector<std::string> rows;      // --rows: only these
  std::int64_t jobs = 1, gpus_per_row = 1, threads_per_row = 0;
};

int run_check(const CheckFlags& f);

Command check_command(CLI::App& root) {
  auto f = std::make_shared<CheckFlags>();
  CLI::App* app = root.add_subcommand(
      "check", "resolve and validate every row of an experiment suite (plugins, options, what the attention plugin "
               "serves, its fallback); print each row's settings, dimensions and parameter count; list missing data "
               "files and devices this machine lacks. Exit 0: valid and runnable here, 3: valid but not runnable "
               "here (data missing, no such device), 1: errors");
  app->add_option("SUITE", f->file, "the suite's (or one experiment's) TOML file")->required();
  add_set_option(*app, f->settings, "the base of every row (or the one experiment)");
  app->add_option("--rows", f->rows, "only these rows (comma-separated names; default: every row)")
      ->delimiter(',')
      ->type_name("ROWS");
  app->add_option("--format", f->format, "table format (csv: only the table on standard output, the rest on standard "
                                        "error)")
      ->check(choice(kTableFormats));
  app->add_option("--jobs", f->jobs, "show what each row gets when `attnlab run --jobs N` trains N rows at once")
      ->check(whole_number(1, 1024))
      ->type_name("N");
  app->add_option("--gpus-per-row", f->gpus_per_row, "as `attnlab run --gpus-per-row`")
      ->check(whole_number(1, 1024))
      ->type_name("N");
  app->add_option("--threads-per-row", f->threads_per_row, "as `attnlab run --threads-per-row`")
      ->check(whole_number(1, 1 << 16))
      ->type_name("N");
  return {app, [f] { return run_check(*f); }};
}

int run_check(const CheckFlags& f) {
  const TableFormat format = kTableFormats.parse(f.format);
  nmt::Suite suite = nmt::load_suite(f.file, f.settings);
  if (!f.rows.empty()) keep_rows(suite, f.rows);
  const Registry& registry = load_suite_plugins(suite);
  // What each row runs with: in this process (one job) or in a job slot of `run --jobs N`; the
  // rows start in order, row i in slot i modulo N while every row takes about as long.
  const nmt::MachinePlan plan =
      f.jobs > 1 ? nmt::divide_machine(allotted_cpus(), cuda_device_count(), f.jobs, f.gpus_per_row, f.threads_per_row)
                 : nmt::divide_machine(allotted_cpus(), 0, 1, 1, f.threads_per_row);
  std::size_t started = 0;

  const std::vector<std::string> header{"row",    "seed",      "settings",   "N",     "d_model",   "d_ff",
                                        "h",      "d_k",       "d_v",        "P_drop", "eps_ls",   "attention",
                                        "positional", "steps", "params(M)", "paper(M)", "threads", "device", "run"};
  std::vector<std::vector<std::string>> table;
  struct Missing {
    std::string id, path, key, row;
    std::size_t others;
  };
  std::vector<Missing> missing;
  // Rows whose device this machine lacks: one warning per reason, naming its first row.
  struct Unavailable {
    std::string why, row;
    std::size_t others;
  };
  std::vector<Unavailable> unavailable;
  std::size_t unavailable_rows = 0;
  std::vector<std::string> notices;
  for (const auto& row : suite.rows) {
    const auto& c = row.config;
    std::vector<std::string> settings;
    for (const auto& [k, v] : row.settings) settings.push_back(fmt::format("{}={}", k, v));
    if (!row.skipped.empty()) {
      notices.push_back(fmt::format("note: row {} is skipped (unsupported = \"skip\"): {}", row.name, row.skipped));
      table.push_back({row.name, std::to_string(row.seed),
                       settings.empty() ? "-" : fmt::format("{}", fmt::join(settings, " ")), "", "", "", "", "", "", "",
                       "", c.model.attention.name, c.model.positional.name, "", "", "", "-", "-", "skipped"});
      continue;
    }
    try {
      check_device_available(Device::parse(c.device));
    } catch (const DeviceError& e) {
      ++unavailable_rows;
      auto it = std::find_if(unavailable.begin(), unavailable.end(), [&](const Unavailable& u) { return u.why == e.what(); });
      if (it == unavailable.end()) unavailable.push_back({e.what(), row.name, 0});
      else ++it->others;
    }
    std::string run = "own", threads = "-", device = "-";
    if (!row.same_as.empty()) {
      run = "same as " + row.same_as;
    } else {
      const nmt::RowResources r = nmt::row_resources(c, plan.slots[started++ % plan.slots.size()]);
      threads = std::to_string(r.threads);
      device = r.visible_gpus.empty() ? r.device : fmt::format("{} (GPUs {})", r.device, r.visible_gpus);
    }
    nmt::ParameterCount count;
    nmt::TransformerConfig served = c.model;  // with the attention plugin that serves the row
    try {
      for (const auto& n : validate_plugins(c, registry)) notices.push_back(fmt::format("note: row {}: {}", row.name, n));
      served.attention = nmt::resolve_attention(c.model, registry, Device::parse(c.device), nmt::compute_dtype(c)).choice;
      count = nmt::count_parameters(served, registry);
    } catch (const Error& e) {
      throw Error(nmt::name_environment(suite.environment,
                                        fmt::format("{}: row {}: {}", row.position, row.name, e.what())));
    }
    const auto& m = c.model;
    const std::string n = m.encoder_layers == m.decoder_layers
                              ? std::to_string(m.encoder_layers)
                              : fmt::format("{}/{}", m.encoder_layers, m.decoder_layers);
    table.push_back({row.name, std::to_string(row.seed), settings.empty() ? "-" : fmt::format("{}", fmt::join(settings, " ")),
                     n, std::to_string(m.dims.d_model), std::to_string(m.dims.d_ff), std::to_string(m.dims.n_heads),
                     std::to_string(m.dims.d_k), std::to_string(m.dims.d_v), number(m.dropout.residual),
                     number(c.training.label_smoothing),
                     served.attention.name == m.attention.name ? m.attention.name
                                                               : fmt::format("{} (fallback)", served.attention.name),
                     m.positional.name, std::to_string(c.training.max_steps),
                     fmt::format("{:.2f}", static_cast<double>(count.total) / 1e6),
                     row.paper && row.paper->params_m ? number(*row.paper->params_m) : "", threads, device, run});
    if (!c.data.synthetic) {
      const std::pair<const char*, const std::string*> files[] = {{"data.train_source", &c.data.train_source},
                                                                  {"data.train_target", &c.data.train_target},
                                                                  {"data.dev_source", &c.data.dev_source},
                                                                  {"data.dev_target", &c.data.dev_target}};
      for (const auto& [key, path] : files) {
        if (path->empty() || std::filesystem::exists(*path)) continue;
        const std::string id = *path + "\n" + key;
        auto it = std::find_if(missing.begin(), missing.end(), [&](const Missing& m) { return m.id == id; });
        if (it == missing.end()) missing.push_back({id, *path, key, row.name, 0});
        else ++it->others;
      }
    }
  }
  // With csv, standard output carries the table alone.
  std::FILE* prose = format == TableFormat::csv ? stderr : stdout;
  fmt::print(prose, "suite {}: {} rows{}\n", suite.name, suite.rows.size(),
             suite.reference.empty() ? "" : fmt::format(" ({})", suite.reference));
  std::fflush(prose);
  print_table(header, table, format);
  std::fflush(stdout);
  fmt::print(prose, "\n{}{}\n", f.jobs > 1 ? "attnlab run --jobs " + std::to_string(f.jobs) + ": " : "one row at a time: ",
             plan.describe());
  if (suite.search) print_search_plan(suite, prose);
  print_expressions(suite, prose);
  if (!notices.empty()) {
    fmt::print(prose, "\n");
    for (const auto& n : notices) fmt::print(prose, "{}\n", n);
  }
  if (!missing.empty() || !unavailable.empty()) {
    fmt::print(prose, "\n");
    for (const auto& m : missing)
      fmt::print(prose, "warning: missing data file: {} (row {}, {}{})\n", m.path, m.row, m.key,
                 m.others ? fmt::format("; and {} more row(s)", m.others) : std::string());
    for (const auto& u : unavailable)
      fmt::print(prose, "warning: row {}: {}{}\n", u.row, u.why,
                 u.others ? fmt::format("; and {} more row(s)", u.others) : std::string());
    std::vector<std::string> why;
    if (!missing.empty()) why.push_back(fmt::format("{} data file(s) are missing", missing.size()));
    if (!unavailable.empty()) why.push_back(fmt::format("{} row(s) need a device this machine lacks", unavailable_rows));
    fmt::print(prose, "the suite is valid, but it cannot run here: {}\n", fmt::join(why, "; "));
    return 3;
  }
  fmt::print(prose, "\nthe suite is valid: {} rows, every data file present\n", suite.rows.size());
  return 0;
}

}  // namespace attnlab::app
