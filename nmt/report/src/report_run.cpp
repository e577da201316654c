// attnlab report of one `attnlab train` folder: the run as a one-row report, its training from
// metrics.jsonl and its figures from the evaluations attnlab eval recorded (eval_record.h).
#include "report_sources.h"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include "attnlab/error.h"
#include "attnlab/nmt/train/training_summary.h"
#include "attnlab/nmt/train/manifest.h"

namespace attnlab::nmt {

namespace fs = std::filesystem;

bool is_train_run_folder(const std::string& dir) {
  std::error_code ec;
  return !fs::exists(fs::path(dir) / "suite.json", ec) && fs::is_regular_file(fs::path(dir) / "config.toml", ec);
}

namespace {

// The threads the run trained on, as its manifest records them (0: no manifest, or none named).
std::int64_t manifest_threads(const fs::path& manifest) {
  std::ifstream in(manifest, std::ios::binary);
  const auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("machine") || !j["machine"].is_object()) return 0;
  const auto& threads = j["machine"].value("threads", nlohmann::json());
  return threads.is_number_integer() ? threads.get<std::int64_t>() : 0;
}

// read_run_files with the training summary it read, for the train folder's own figures.
TrainingSummary read_run_files_and_summary(ReportRun& run, Report& report) {
  TrainingSummary t = read_training_summary(fs::path(run.dir) / "metrics.jsonl");
  run.train_loss = t.train_loss;
  run.dev_ppl = t.dev_ppl;
  run.trained_steps = t.last_step;
  run.trained_seconds = t.seconds;
  if (const fs::path m = fs::path(run.dir) / kManifestFile; fs::exists(m)) {
    run.manifest = m.string();
    run.threads = manifest_threads(m);
  }
  try {
    run.evals = read_eval_records(run.dir);
  } catch (const std::exception& e) {
    report.warnings.push_back(e.what());
  }
  return t;
}

}  // namespace

void read_run_files(ReportRun& run, Report& report) { read_run_files_and_summary(run, report); }

Report collect_train_run(const std::string& run_dir) {
  const fs::path config_path = fs::path(run_dir) / "config.toml";
  toml::table config;
  try {
    config = toml::parse_file(config_path.string());
  } catch (const toml::parse_error& e) {
    throw Error(fmt::format("{}: not a readable run configuration: {}", config_path.string(), e.description()));
  }
  Report report;
  report.name = config["experiment"]["name"].value_or(fs::path(run_dir).filename().string());
  report.source = config_path.string();
  report.run_dir = run_dir;
  ReportRow row;
  row.name = report.name;
  ReportRun run;
  run.seed = static_cast<std::uint64_t>(config["experiment"]["seed"].value_or(std::int64_t{1}));
  run.dir = run_dir;
  const TrainingSummary t = read_run_files_and_summary(run, report);
  const std::int64_t max_steps = config["training"]["max_steps"].value_or(std::int64_t{0});
  // Finished: trained to max_steps (or stopped early, which also ends in a dev evaluation that
  // attnlab eval recorded); an unfinished run shows as pending with its curves so far.
  const bool finished = t.last_step > 0 && (t.last_step >= max_steps || run.evals.contains("dev"));
  run.status = finished ? RowStatus::kDone : RowStatus::kPending;
  if (finished) {
    RowResult r;
    r.row = row.name;
    r.seed = run.seed;
    r.steps = t.last_step;
    r.parameters = t.parameters;
    r.train_seconds = t.seconds;
    r.tokens_per_second = t.tokens_per_second;
    if (!t.dev_ppl.empty()) r.dev_ppl = t.dev_ppl.back().value;
    if (auto dev = run.evals.find("dev"); dev != run.evals.end()) {
      r.dev_ppl = dev->second.ppl;
      r.dev_ppl_smoothed = dev->second.ppl_smoothed;
      r.bleu = dev->second.bleu;
      r.bleu_mode = dev->second.bleu_mode;
      r.bleu_signature = dev->second.bleu_signature;
      r.beam = dev->second.beam;
      r.alpha = dev->second.alpha;
    }
    run.result = r;
  }
  row.runs.push_back(std::move(run));
  report.rows.push_back(std::move(row));
  return report;
}

}  // namespace attnlab::nmt
