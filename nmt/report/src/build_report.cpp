#include "attnlab/nmt/report/report.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include <fmt/core.h>
#include <toml++/toml.h>

#include <nlohmann/json.hpp>

#include "attnlab/error.h"
#include "attnlab/suggest.h"
#include "attnlab/nmt/io/file_util.h"
#include "attnlab/nmt/train/manifest.h"
#include "report_sources.h"
#include "writers.h"

namespace attnlab::nmt {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  ATTNLAB_CHECK(in.good(), "cannot open '{}'", path);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

bool file_exists(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

}  // namespace

// ---- public ----

namespace {
constexpr std::pair<std::string_view, ReportFormat> kReportFormatAliases[] = {
    {"text", ReportFormat::kTerminal}, {"md", ReportFormat::kMarkdown}, {"tex", ReportFormat::kLatex}};
}  // namespace

std::vector<std::string> report_format_aliases() {
  std::vector<std::string> names;
  for (const auto& [alias, format] : kReportFormatAliases) names.emplace_back(alias);
  return names;
}

ReportFormat parse_report_format(std::string_view name) {
  for (const auto& [alias, format] : kReportFormatAliases)
    if (alias == name) return format;
  return kReportFormats.parse(name);
}


Summary summarize(const std::vector<double>& values) {
  Summary s;
  s.n = static_cast<int>(values.size());
  if (values.empty()) return s;
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / s.n;
  if (s.n > 1) {
    double sq = 0;
    for (double v : values) sq += (v - s.mean) * (v - s.mean);
    s.std = std::sqrt(sq / (s.n - 1));
  }
  return s;
}

std::string ReportRow::status_text() const {
  const int total = static_cast<int>(runs.size());
  const std::string same = same_as.empty() ? "" : fmt::format(" (same run as {})", same_as);
  if (done == total) return "done" + same;
  // Under a search: each run's standing (a failed run's own words when the search recorded it).
  if (std::any_of(runs.begin(), runs.end(), [](const ReportRun& r) { return r.search.has_value(); })) {
    std::string s;
    for (const ReportRun& run : runs) {
      std::string t = run.status == RowStatus::kDone ? "done" : std::string(row_status_name(run.status));
      if (run.search && run.status != RowStatus::kDone &&
          (run.status != RowStatus::kFailed || run.search->standing == SearchStanding::failed))
        t = run.search->text;
      if (!s.empty()) s += "; ";
      s += total == 1 ? t : fmt::format("seed {}: {}", run.seed, t);
    }
    return s + same;
  }
  if (failed == total) return "failed" + same;
  if (pending == total) return "pending" + same;
  if (skipped == total) return "skipped";
  std::string s = fmt::format("{}/{} done", done, total);
  if (failed) s += fmt::format(", {} failed", failed);
  if (pending) s += fmt::format(", {} pending", pending);
  if (skipped) s += fmt::format(", {} skipped", skipped);
  return s + same;
}

std::string find_dev_reference(const std::string& row_dir) {
  const fs::path cfg = fs::path(row_dir) / "config.toml";
  if (!file_exists(cfg)) return "";
  toml::table doc;
  try {
    doc = toml::parse_file(cfg.string());
  } catch (const toml::parse_error&) {
    return "";
  }
  std::string candidate;
  const auto data = doc["data"];
  if (auto dt = data["dev_target"].value<std::string>(); dt && !dt->empty()) {
    candidate = *dt;
  } else if (data["synthetic"].is_table()) {
    const auto s = data["synthetic"];
    candidate = (fs::path(data["cache_dir"].value_or(std::string())) /
                 fmt::format("synthetic-{}-{}-{}-{}", s["seed"].value_or(std::int64_t{1}),
                             s["train_pairs"].value_or(std::int64_t{20000}), s["dev_pairs"].value_or(std::int64_t{500}),
                             s["test_pairs"].value_or(std::int64_t{500})) /
                 "dev.tgt")
                    .string();
  }
  if (candidate.empty()) return "";
  if (file_exists(candidate)) return candidate;
  if (fs::path(candidate).is_relative() && file_exists(fs::path(row_dir) / candidate))
    return (fs::path(row_dir) / candidate).string();
  return "";
}

namespace {

// The rows and runs of a suite folder, before summaries.
Report collect_suite(const std::string& run_dir) {
  const SuiteState state = read_suite_state((fs::path(run_dir) / "suite.json").string());
  Report report;
  report.name = state.name;
  report.source = state.source;
  report.reference = state.reference;
  report.run_dir = run_dir;

  std::map<std::string, std::size_t> index;
  for (const SuiteRowState& s : state.rows) {
    auto [it, inserted] = index.try_emplace(s.name, report.rows.size());
    if (inserted) {
      ReportRow row;
      row.name = s.name;
      row.settings = s.settings;
      row.paper = s.paper;
      report.rows.push_back(std::move(row));
    }
    ReportRow& row = report.rows[it->second];
    if (!row.paper && s.paper) row.paper = s.paper;
    if (row.same_as.empty()) row.same_as = s.same_as;
    ReportRun run;
    run.seed = s.seed;
    run.dir = (fs::path(run_dir) / s.dir).string();
    run.status = s.status;
    run.error = s.error;
    const fs::path result_path = fs::path(run.dir) / "result.json";
    // A row's result.json is the truth: rows finished by another process (a Slurm task, a later
    // `attnlab run --row`) are done whatever suite.json said when it was written.
    if (file_exists(result_path)) run.status = RowStatus::kDone, run.error.clear();
    if (run.status == RowStatus::kDone) {
      if (file_exists(result_path)) {
        try {
          run.result = read_row_result(result_path.string());
        } catch (const std::exception& e) {
          report.warnings.push_back(e.what());
        }
      } else {
        report.warnings.push_back(fmt::format("{} (seed {}) is marked done but has no {}", s.name, s.seed, result_path.string()));
      }
      if (!run.result) run.status = RowStatus::kPending;
    }
    read_run_files(run, report);
    row.runs.push_back(std::move(run));
  }
  read_search(report);
  return report;
}

// Each run's manifest against the base row's first one, outside what the run's row sets itself.
void compare_manifests(Report& report, const ReportRow& base) {
  const auto with_manifest = std::find_if(base.runs.begin(), base.runs.end(), [](const ReportRun& r) { return !r.manifest.empty(); });
  if (with_manifest == base.runs.end()) return;
  std::string reference;
  try {
    reference = detail::read_file_bytes(with_manifest->manifest, "run manifest");
  } catch (const std::exception& e) {
    report.warnings.push_back(e.what());
    return;
  }
  for (ReportRow& row : report.rows) {
    std::vector<std::string> keys;
    for (const auto& [key, value] : row.settings) keys.push_back(key);
    const std::vector<std::string> exempt = row_manifest_exemptions(keys);
    for (ReportRun& run : row.runs) {
      if (run.manifest.empty()) continue;
      try {
        run.manifest_differences =
            manifest_differences(reference, detail::read_file_bytes(run.manifest, "run manifest"), exempt);
      } catch (const std::exception& e) {
        report.warnings.push_back(fmt::format("{}: {}", run.manifest, e.what()));
      }
    }
  }
}

// The rows of a suite folder or a train run, before summaries, each run with its dev reference.
Report collect(const std::string& dir, const ReportOptions& options) {
  Report report = is_train_run_folder(dir) ? collect_train_run(dir) : collect_suite(dir);
  for (ReportRow& row : report.rows)
    for (ReportRun& run : row.runs)
      run.dev_reference = options.dev_reference.empty() ? find_dev_reference(run.dir) : options.dev_reference;
  return report;
}

// The sources' labels: each folder's name, with as many of its parents as tell it apart from the
// others (a number after the name where even the whole paths agree: one folder given twice).
std::vector<std::string> source_labels(const std::vector<std::string>& sources) {
  std::vector<std::vector<std::string>> parts;  // each path's components, last first
  for (const std::string& s : sources) {
    std::vector<std::string> p;
    std::error_code ec;  // absolute: a folder named relatively and absolutely is one folder
    const fs::path full = fs::weakly_canonical(fs::absolute(s), ec);
    for (const fs::path& c : (ec ? fs::path(s) : full).lexically_normal())
      if (!c.empty() && c != "." && c != "/") p.insert(p.begin(), c.string());
    if (p.empty()) p.push_back(s);
    parts.push_back(std::move(p));
  }
  const std::size_t n = sources.size();
  std::vector<std::size_t> depth(n, 1);
  std::vector<std::string> labels(n);
  for (;;) {
    for (std::size_t i = 0; i < n; ++i) {
      labels[i].clear();
      for (std::size_t k = std::min(depth[i], parts[i].size()); k-- > 0;) labels[i] += (labels[i].empty() ? "" : "/") + parts[i][k];
    }
    bool deeper = false, clash = false;
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j)
        if (i != j && labels[i] == labels[j]) {
          clash = true;
          if (depth[i] < parts[i].size()) ++depth[i], deeper = true;
          break;
        }
    if (!clash) return labels;
    if (!deeper) break;
  }
  std::vector<std::string> numbered = labels;
  for (std::size_t i = 0; i < n; ++i) {
    int same = 0, index = 0;
    for (std::size_t j = 0; j < n; ++j)
      if (labels[j] == labels[i]) ++same, index += j <= i ? 1 : 0;
    if (same > 1) numbered[i] = parts[i].front() + fmt::format("#{}", index);
  }
  return numbered;
}

// The rows of several sources in one report, each row named LABEL/ROW.
Report collect_sources(const std::vector<std::string>& sources, const ReportOptions& options) {
  const std::vector<std::string> labels = source_labels(sources);
  Report report;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    Report one = collect(sources[i], options);
    report.sources.push_back({labels[i], sources[i], one.name, one.source, one.search});
    report.name += (i ? " + " : "") + (one.name.empty() ? labels[i] : one.name);
    if (report.reference.empty()) report.reference = one.reference;
    for (ReportRow& row : one.rows) {
      row.name = labels[i] + "/" + row.name;
      if (!row.same_as.empty()) row.same_as = labels[i] + "/" + row.same_as;
      report.rows.push_back(std::move(row));
    }
    for (std::string& w : one.warnings) report.warnings.push_back(labels[i] + ": " + w);
  }
  return report;
}

// The base row: the one options.base names (its whole name, or the name of a row that one source
// alone has), else the first row named base (or SOURCE/base), else the first.
std::vector<ReportRow>::iterator choose_base(Report& report, const std::string& base) {
  auto& rows = report.rows;
  const auto ends_with = [](const std::string& name, const std::string& tail) {
    return name == tail || (name.size() > tail.size() && name.ends_with("/" + tail));
  };
  if (base.empty()) {
    const auto it = std::find_if(rows.begin(), rows.end(), [&](const ReportRow& r) { return ends_with(r.name, "base"); });
    return it == rows.end() ? rows.begin() : it;
  }
  if (auto it = std::find_if(rows.begin(), rows.end(), [&](const ReportRow& r) { return r.name == base; }); it != rows.end())
    return it;
  std::vector<std::vector<ReportRow>::iterator> matches;
  for (auto it = rows.begin(); it != rows.end(); ++it)
    if (ends_with(it->name, base)) matches.push_back(it);
  if (matches.size() == 1) return matches.front();
  std::vector<std::string> names;
  for (const ReportRow& r : rows) names.push_back(r.name);
  std::string list;
  for (std::size_t i = 0; i < names.size(); ++i) list += (i ? ", " : "") + names[i];
  if (matches.size() > 1)
    throw Error(fmt::format("--base {}: {} sources have a row {}; name one as SOURCE/ROW (rows: {})", base, matches.size(),
                            base, list));
  throw Error(fmt::format("--base {}: no such row{} (rows: {})", base, did_you_mean(base, names), list));
}

}  // namespace

Report build_report(const std::string& run_dir, const ReportOptions& options) {
  return build_report(std::vector<std::string>{run_dir}, options);
}

Report build_report(const std::vector<std::string>& sources, const ReportOptions& options) {
  ATTNLAB_CHECK(!sources.empty(), "report: no run folder given");
  Report report = sources.size() == 1 ? collect(sources.front(), options) : collect_sources(sources, options);
  report.bootstrap_samples = options.bootstrap_samples;
  report.bootstrap_seed = options.bootstrap_seed;

  for (ReportRow& row : report.rows) {
    std::vector<double> params, steps, secs, tps, ppl, bleu, test_ppl, test_bleu;
    for (const ReportRun& run : row.runs) {
      if (run.status == RowStatus::kFailed) ++row.failed;
      else if (run.status == RowStatus::kPending) ++row.pending;
      else if (run.status == RowStatus::kSkipped) ++row.skipped;
      if (run.status != RowStatus::kDone) continue;
      ++row.done;
      const RowResult& r = *run.result;
      params.push_back(static_cast<double>(r.parameters));
      steps.push_back(static_cast<double>(r.steps));
      secs.push_back(r.train_seconds);
      tps.push_back(r.tokens_per_second);
      ppl.push_back(r.dev_ppl);
      if (auto test = run.evals.find("test"); test != run.evals.end()) {
        test_ppl.push_back(test->second.ppl);
        test_bleu.push_back(test->second.bleu);
      }
      if (r.bleu_mode.empty()) continue;  // a train folder without a recorded dev evaluation
      bleu.push_back(r.bleu);
      auto kind = std::find_if(report.bleu_kinds.begin(), report.bleu_kinds.end(), [&](const Report::BleuKind& k) {
        return k.mode == r.bleu_mode && k.signature == r.bleu_signature;
      });
      if (kind == report.bleu_kinds.end())
        kind = report.bleu_kinds.insert(report.bleu_kinds.end(), Report::BleuKind{r.bleu_mode, r.bleu_signature, {}});
      if (kind->rows.empty() || kind->rows.back() != row.name) kind->rows.push_back(row.name);
    }
    row.params = summarize(params), row.steps = summarize(steps), row.train_seconds = summarize(secs);
    row.tokens_per_second = summarize(tps), row.dev_ppl = summarize(ppl), row.bleu = summarize(bleu);
    row.test_ppl = summarize(test_ppl), row.test_bleu = summarize(test_bleu);
  }
  if (report.rows.empty()) return report;

  const auto base_it = choose_base(report, options.base);
  base_it->is_base = true;
  report.base_row = base_it->name;
  const ReportRow& base = *base_it;
  compare_manifests(report, base);

  // Per-sentence statistics of a row, its seeds pooled (summed per sentence). Empty with a note
  // when something is missing.
  std::map<std::string, std::vector<std::string>> ref_cache;
  // `refs`: the dev reference the row's runs were scored against (its first run's).
  const auto pooled = [&](const ReportRow& row, BleuConfig& config, std::string& note,
                          const std::vector<std::string>*& refs_used) {
    std::vector<BleuStats> stats;
    bool have_config = false;
    for (const ReportRun& run : row.runs) {
      if (run.status != RowStatus::kDone) continue;
      const fs::path hyp_path = fs::path(run.dir) / "dev.hyp";
      if (!file_exists(hyp_path)) return note = fmt::format("no {}", hyp_path.string()), std::vector<BleuStats>{};
      if (run.dev_reference.empty())
        return note = fmt::format("the dev reference of {} was not found (use --ref)", run.dir), std::vector<BleuStats>{};
      const BleuConfig c = bleu_config_for(run.result->bleu_mode, run.result->bleu_signature);
      if (!have_config) config = c, have_config = true;
      try {
        auto [it, fresh] = ref_cache.try_emplace(run.dev_reference);
        if (fresh) it->second = read_lines(run.dev_reference);
        const std::vector<std::string>& refs = it->second;
        if (!refs_used) refs_used = &refs;
        const std::vector<std::string> hyps = read_lines(hyp_path.string());
        if (hyps.size() != refs.size())
          return note = fmt::format("{} has {} lines, the reference {} has {}", hyp_path.string(), hyps.size(),
                                    run.dev_reference, refs.size()),
                 std::vector<BleuStats>{};
        if (stats.empty()) stats.resize(hyps.size());
        if (stats.size() != hyps.size()) return note = "the seeds were scored on different dev sets", std::vector<BleuStats>{};
        for (std::size_t i = 0; i < hyps.size(); ++i) {
          const std::vector<std::string> one{refs[i]};
          stats[i] += refs[i].empty() ? BleuStats{0, 0, std::vector<std::int64_t>(static_cast<std::size_t>(config.max_ngram_order), 0),
                                                   std::vector<std::int64_t>(static_cast<std::size_t>(config.max_ngram_order), 0), 1}
                                      : sentence_bleu_stats(hyps[i], one, config);
        }
      } catch (const std::exception& e) {
        return note = e.what(), std::vector<BleuStats>{};
      }
    }
    if (stats.empty() && note.empty()) note = "no finished seed";
    return stats;
  };

  BleuConfig base_config;
  std::string base_note;
  const std::vector<std::string>* base_refs = nullptr;
  const std::vector<BleuStats> base_stats =
      base.done > 0 ? pooled(base, base_config, base_note, base_refs) : std::vector<BleuStats>{};
  if (base.done == 0) base_note = "the base row has no result";
  for (ReportRow& row : report.rows) {
    if (row.is_base || row.done == 0) continue;
    if (base.done > 0) {
      row.delta_ppl = row.dev_ppl.mean - base.dev_ppl.mean;
      row.delta_bleu = row.bleu.mean - base.bleu.mean;
    }
    if (base_stats.empty()) {
      row.bootstrap_note = base_note.empty() ? "no base statistics" : fmt::format("base row: {}", base_note);
      continue;
    }
    BleuConfig config;
    std::string note;
    const std::vector<std::string>* refs = nullptr;
    const std::vector<BleuStats> stats = pooled(row, config, note, refs);
    if (stats.empty()) {
      row.bootstrap_note = note;
      continue;
    }
    // Rows of other sources may have been scored on other sentences: paired only on the same ones.
    if (refs && base_refs && *refs != *base_refs) {
      row.bootstrap_note = "scored on another dev set than the base row";
      continue;
    }
    if (stats.size() != base_stats.size()) {
      row.bootstrap_note = fmt::format("{} dev sentences, the base row {}", stats.size(), base_stats.size());
      continue;
    }
    if (bleu_signature(config, 1) != bleu_signature(base_config, 1)) {
      row.bootstrap_note = "scored with another BLEU mode than the base row";
      continue;
    }
    row.bootstrap = paired_bootstrap(base_stats, stats, config, options.bootstrap_samples, options.bootstrap_seed);
  }
  compare_with_paper(report);
  return report;
}

std::string render_report(const Report& report, ReportFormat format) {
  switch (format) {
    case ReportFormat::kTerminal: return detail::render_terminal(report);
    case ReportFormat::kMarkdown: return detail::render_markdown(report);
    case ReportFormat::kCsv: return detail::render_csv(report);
    case ReportFormat::kLatex: return detail::render_latex(report);
    case ReportFormat::kHtml: return detail::render_html(report);
  }
  return detail::render_terminal(report);
}

}  // namespace attnlab::nmt
