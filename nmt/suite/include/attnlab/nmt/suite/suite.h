#pragma once
// Experiment suites: a base configuration plus named rows of overrides (Table 3 is exactly this)
// and grids (cartesian products, with tied values), each row trained with one or more seeds.
//
//   [suite]   name, base (an experiment file the suite starts from), seeds, run_dir, reference
//   [suite.slurm]  partition, account, qos, time, gpus, gres, cpus, mem, max_running, sbatch,
//             setup: what `attnlab run --slurm` asks Slurm for, per row (docs/scaling.md)
//   [vars]    strings substituted as ${name} in every string value (and from the environment)
//   [base]    experiment tables ([base.model], [base.training], ...) applied over the base file
//   [rows.<name>]  dotted overrides ("model.heads" = 1) and optional paper = { ppl, bleu, params }
//   [search]  method = "halving", metric, eta, first_rung, max_steps: successive halving (search.h)
//   [grids.<name>] axes = [ { "model.heads" = [1, 4], "model.d_k" = [128, 32] }, {...} ]
//                  keys inside one axis are tied (zipped); axes are crossed.
// docs/experiments.md documents the format.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "attnlab/name_table.h"
#include "attnlab/nmt/experiment/experiment.h"
#include "attnlab/nmt/suite/search.h"

namespace attnlab::nmt {

// What a row whose attention plugin cannot serve it becomes (grids.<name>.unsupported, or
// suite.unsupported): the suite is refused (error), the row's fallback, else scaled_dot, serves it
// (fallback), or the row is listed as skipped, with the reason (skip); applied once the plugins
// are loaded (row_policy.h).
enum class UnsupportedRows : std::uint8_t { error, fallback, skip };
inline constexpr auto kUnsupportedRows = name_table<UnsupportedRows>(
    "unsupported policy",
    {{UnsupportedRows::error, "error"}, {UnsupportedRows::fallback, "fallback"}, {UnsupportedRows::skip, "skip"}});

// The paper's numbers for a row, shown beside ours in reports.
struct PaperReference {
  std::optional<double> ppl;       // dev perplexity per wordpiece (Table 3: newstest2013)
  std::optional<double> bleu;      // dev BLEU
  std::optional<double> params_m;  // millions of parameters
};

struct SuiteRow {
  std::string name;                                  // "base", "A1", "heads-03", ...
  std::uint64_t seed = 1;
  // The row's own settings, dotted key -> value as written ("model.heads" -> "1"), for reports.
  std::vector<std::pair<std::string, std::string>> settings;
  std::optional<PaperReference> paper;
  ExperimentConfig config;                           // fully resolved, run_dir set
  std::string hash;                                  // 16 hex digits of the resolved config + seed
  // Where the row's definition starts in the suite file (file:line:column), for messages.
  std::string position;
  UnsupportedRows unsupported = UnsupportedRows::error;
  // The earlier row whose resolved configuration and seed equal this one's: this row shares its
  // run folder (config.run_dir) and is never trained on its own. Empty for a row of its own.
  std::string same_as;
  // Why the row is not run (unsupported = "skip"); empty for a row that runs.
  std::string skipped;
};

// [suite.slurm]: the resources of each row's Slurm task; empty / 0 leaves Slurm's default.
struct SlurmSettings {
  std::string partition, account, qos;
  std::string time;                  // the row's time limit, as sbatch takes it ("12:00:00", "2-00:00:00")
  std::int64_t gpus = 0;             // GPUs per row (--gres=gpu:N)
  std::string gres;                  // or a generic resource as written ("gpu:a100:1")
  std::int64_t cpus = 0;             // CPUs per row (--cpus-per-task); also the row's threads
  std::string mem;                   // memory per row ("32G")
  std::int64_t max_running = 0;      // rows running at once (the array's %N throttle)
  std::vector<std::string> sbatch;   // further sbatch options, one per line ("--constraint=h100")
  std::vector<std::string> setup;    // shell lines run before each row (module load, environment)
};

struct Suite {
  std::string name;
  std::string source_file;
  std::string run_dir;            // default runs/<name>; rows live in <run_dir>/<row>-s<seed>-<hash>
  std::string reference;          // e.g. "Vaswani et al. 2017, Table 3"
  SlurmSettings slurm;            // [suite.slurm]
  std::optional<SearchSpec> search;  // [search]: rows pruned by successive halving (search.h)
  std::vector<SuiteRow> rows;     // base first, then rows in file order, then grid rows
  // The command line's --set KEY=VALUE it was loaded with, given again to every process that
  // trains one of its rows (--jobs children, Slurm tasks), so that they resolve the same rows.
  std::vector<std::string> settings;
  // The environment variables its ${NAME} values came from, with their values.
  std::map<std::string, std::string> environment;
};

// `message` with, for each of `environment`'s values it quotes ('value'), where that value came
// from: "(the value 'scaled-dot' came from the environment variable ATTNLAB_ATTENTION)".
std::string name_environment(const std::map<std::string, std::string>& environment, const std::string& message);

// Reads and expands a suite file: every row resolved and validated as an experiment (file:line:
// column and the key in every error; unknown keys suggested). Plugins are not checked here. One
// experiment's file (tables of an experiment, none of a suite) reads as a suite of one row,
// "experiment", named after the experiment. `settings` are the command line's --set KEY=VALUE
// (toml_edit.h: command_line_settings): over the base of every row (the row's own changes still
// apply over them), or over the one experiment.
Suite load_suite(const std::string& path, const std::vector<std::string>& settings = {});

// The row folder: <suite.run_dir>/<row.name>-s<seed>-<hash>. (A row that is the same run as an
// earlier one trains in that row's folder instead: its config.run_dir.)
std::string row_dir(const Suite& suite, const SuiteRow& row);

// Marks every row whose resolved configuration (training and evaluation, all but its name) and
// seed equal an earlier row's as the same run: same_as names the earlier row and config.run_dir
// becomes its folder. load_suite does this; so does apply_unsupported after a fallback.
void mark_identical_rows(Suite& suite);

// "NAME@SEED": how `attnlab run SUITE --row` names one (row, seed) of a suite.
std::string row_key(const SuiteRow& row);

// ---- results, written by `attnlab run`, read by `attnlab report` ----
// <suite.run_dir>/suite.json          the expanded suite: rows with name, seed, hash, dir, settings,
//                                     paper values, and status ("pending", "done", "failed") and
//                                     error for failed rows
// <row dir>/result.json               RowResult below
// <row dir>/metrics.jsonl             the trainer's log (learning curves)
// <row dir>/dev.hyp                   the dev translations scored for BLEU (bootstrap tests)
struct RowResult {
  std::string row;
  std::uint64_t seed = 1;
  std::int64_t steps = 0;
  std::int64_t parameters = 0;
  double train_seconds = 0.0;        // summed over every invocation of the trainer
  double tokens_per_second = 0.0;    // target tokens per second of training
  double dev_ppl = 0.0;              // per wordpiece, no label smoothing
  double dev_ppl_smoothed = 0.0;     // with the row's label smoothing (the training objective)
  double bleu = 0.0;
  std::string bleu_signature;        // e.g. "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0"
  std::string bleu_mode;             // "sacrebleu", "tokenized", "paper-wmt14"
  std::int64_t beam = 4;
  double alpha = 0.6;
};

}  // namespace attnlab::nmt
