#pragma once
// Reports of suite runs (`attnlab report RUN_DIR...`): one table row per suite row (its seeds
// grouped; with several sources, each row named SOURCE/ROW), with the row's settings, parameters, steps, training time, throughput, dev perplexity
// and BLEU (mean and standard deviation over seeds), their change against the base row, a paired
// bootstrap test of BLEU against the base row, and the paper's numbers beside ours; under a
// search (search.json), where each row stands in it. Rendered as aligned text, Markdown, CSV,
// LaTeX (booktabs) or a self-contained HTML page with learning curves drawn as inline SVG (the
// search's rungs and stopping points marked). docs/experiments.md ("Reports") describes the output.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <map>
#include <utility>
#include <vector>

#include "attnlab/nmt/metrics/bleu.h"
#include "attnlab/nmt/metrics/bootstrap.h"
#include "attnlab/nmt/eval/eval_record.h"
#include "attnlab/nmt/train/training_summary.h"
#include "attnlab/nmt/suite/search_state.h"
#include "attnlab/nmt/suite/suite.h"
#include "attnlab/nmt/suite/suite_results.h"

namespace attnlab::nmt {

enum class ReportFormat { kTerminal, kMarkdown, kCsv, kLatex, kHtml };
inline constexpr auto kReportFormats = name_table<ReportFormat>("report format", {{ReportFormat::kTerminal, "terminal"},
                                                                                {ReportFormat::kMarkdown, "markdown"},
                                                                                {ReportFormat::kCsv, "csv"},
                                                                                {ReportFormat::kLatex, "latex"},
                                                                                {ReportFormat::kHtml, "html"}});
// Other names accepted for them: text, md, tex.
std::vector<std::string> report_format_aliases();
ReportFormat parse_report_format(std::string_view name);  // throws attnlab::Error on unknown names


struct Summary {
  double mean = 0.0;
  double std = 0.0;  // sample standard deviation (n - 1); 0 for a single value
  int n = 0;
};
Summary summarize(const std::vector<double>& values);

// A run under the suite's search: where it stands (SearchState::standing, standing_rung).
// A run's standing in the search (search_state.h: run_standing).
using RunSearch = RunStanding;

// One (row, seed) run.
struct ReportRun {
  std::uint64_t seed = 1;
  std::string dir;  // absolute or relative to the working folder
  RowStatus status = RowStatus::kPending;
  std::string error;
  std::optional<RowResult> result;  // result.json when present
  std::vector<CurvePoint> train_loss, dev_ppl;  // from metrics.jsonl
  // Its training so far (metrics.jsonl: the last step logged, the time summed over invocations)
  // and the threads it trained on (manifest.json; 0 when unknown): what a search spent on it.
  std::int64_t trained_steps = 0;
  double trained_seconds = 0.0;
  std::int64_t threads = 0;
  std::string dev_reference;                    // resolved path ("" when unknown)
  std::map<std::string, EvalRecord> evals;      // what attnlab eval recorded in the folder, by set
  std::string manifest;                         // its manifest.json ("" when the folder has none)
  // Where the manifest disagrees with the base row's (first seed's), leaving out what the row sets
  // itself (manifest_differences, row_manifest_exemptions): "path: a vs b".
  std::vector<std::string> manifest_differences;
  std::optional<RunSearch> search;  // under a search: its standing (none without search.json)
};

// One metric of one row beside the paper: the paper's change for the same row (its row minus its
// base row), whether our change points the same way, and whether ours stands out of the noise.
struct EffectCheck {
  std::optional<double> paper_delta;
  std::optional<bool> agrees;  // none when either change is missing or the paper's is zero
  bool outside_noise = false;
  std::string verdict() const;  // "agrees", "agrees*", "differs", "differs*" (* outside the noise), "" when none
};

// One table row: a suite row with all its seeds.
struct ReportRow {
  std::string name;
  std::vector<std::pair<std::string, std::string>> settings;
  std::optional<PaperReference> paper;
  std::vector<ReportRun> runs;
  int done = 0, failed = 0, pending = 0, skipped = 0;
  std::string same_as;  // the row whose runs these are (identical configuration and seeds), or empty
  // Over the runs that are done (n = 0: no numbers yet).
  Summary params, steps, train_seconds, tokens_per_second, dev_ppl, bleu;
  Summary test_ppl, test_bleu;  // over the runs with a recorded evaluation of their test set
  std::optional<double> delta_ppl, delta_bleu;  // mean minus the base row's mean
  std::optional<BootstrapResult> bootstrap;     // BLEU against the base row
  std::string bootstrap_note;                   // why there is no test ("" when there is)
  EffectCheck ppl_effect, bleu_effect;          // against the paper (compare_with_paper)
  bool is_base = false;
  // "done", "2/3 done, 1 failed", "pending", "skipped", "done (same run as base)", ...; under a
  // search, the standing of a run not done ("stopped at rung 0: dev_ppl 7.12"; several seeds:
  // "seed 1: ...; seed 2: done").
  std::string status_text() const;
};

struct Report {
  std::string name, source, reference, run_dir;
  // With several sources (suite folders or train runs): each one's label (the prefix of its rows'
  // names), folder, name and suite file; empty with one.
  struct Source {
    std::string label, dir, name, file;
    std::optional<SearchState> search;  // the source's search.json, when it has one
  };
  std::vector<Source> sources;
  std::vector<ReportRow> rows;
  // The chosen base row (ReportOptions::base), else the first row named "base" (with several
  // sources, SOURCE/base), otherwise the first row.
  std::string base_row;
  // Distinct (mode, signature) pairs of the BLEU numbers, with the rows that use each.
  struct BleuKind {
    std::string mode, signature;
    std::vector<std::string> rows;
  };
  std::vector<BleuKind> bleu_kinds;
  int bootstrap_samples = 1000;
  std::uint64_t bootstrap_seed = 12345;
  std::vector<std::string> warnings;  // unreadable files and the like
  std::optional<SearchState> search;  // the suite's search.json, when it has one
  // How many rows' effects point the paper's way, per metric (compare_with_paper).
  struct Agreement {
    int compared = 0, agree = 0, agree_outside_noise = 0;
    std::vector<std::string> differ_outside_noise;  // rows against the paper beyond the noise
    std::string summary(std::string_view metric) const;  // "dev PPL: direction agrees on k of n rows (m significant)"
  };
  Agreement ppl_agreement, bleu_agreement;
  // The seed noise floor: twice the base row's standard deviation over its seeds (at least two).
  std::optional<double> ppl_noise, bleu_noise;
};

// Fills every row's ppl_effect and bleu_effect and the report's agreement counts from the deltas,
// the bootstrap tests and the paper's values (build_report calls it). A change is outside the
// noise when it exceeds the seed noise floor (dev PPL: required; BLEU: when the base has seeds to
// give one) and, for BLEU, the paired bootstrap is significant at 5 % two-sided.
void compare_with_paper(Report& report);

struct ReportOptions {
  int bootstrap_samples = 1000;
  std::uint64_t bootstrap_seed = 12345;
  std::string dev_reference;  // overrides the reference found through each row's config.toml
  // The base row, as the table names it (ROW; SOURCE/ROW with several sources, or ROW where one
  // source alone has it); empty: the default (Report::base_row).
  std::string base;
};

// Reads RUN_DIR/suite.json and every row folder. Pending rows, failed rows and rows whose files
// are missing are kept (shown as such); only an unreadable suite.json throws. A folder of
// `attnlab train` (config.toml, no suite.json) gives a one-row report of that run: its training
// from metrics.jsonl, dev and test figures from the evaluations `attnlab eval` recorded.
Report build_report(const std::string& run_dir, const ReportOptions& options = {});
// One table over several sources, each a suite folder or a train run (read as above): every row
// named SOURCE/ROW, SOURCE the folder's name (with as much of its path as tells the sources
// apart), the changes against one base row, and the paired bootstrap between the base row and
// each row scored on the same dev sentences. Throws on an unknown base row, naming the rows.
Report build_report(const std::vector<std::string>& sources, const ReportOptions& options = {});

std::string render_report(const Report& report, ReportFormat format);

// The dev reference of a row folder: [data] dev_target of its config.toml, or dev.tgt of the
// synthetic corpus it was trained on; relative paths are tried as written and against the row
// folder. "" when not found.
std::string find_dev_reference(const std::string& row_dir);

}  // namespace attnlab::nmt
