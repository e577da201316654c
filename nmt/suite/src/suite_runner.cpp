#include "attnlab/nmt/suite/suite_runner.h"

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <map>

#include "attnlab/error.h"
#include "attnlab/threads.h"
#include "attnlab/nmt/checkpoint/average.h"
#include "attnlab/nmt/data/corpus.h"
#include "attnlab/nmt/eval/evaluation.h"
#include "attnlab/nmt/io/folder_lock.h"
#include "attnlab/nmt/data/prepared_data.h"
#include "attnlab/nmt/suite/machine_share.h"
#include "attnlab/nmt/suite/suite_results.h"
#include "attnlab/nmt/train/trainer.h"
#include "attnlab/nmt/train/training_summary.h"

namespace attnlab::nmt {
namespace {

namespace fs = std::filesystem;


}  // namespace

RowResult run_row(const Suite& suite, const SuiteRow& row, const Registry& registry, bool progress,
                  const std::function<void(const std::string&)>& log) {
  const ExperimentConfig& c = row.config;
  // The row's folder is this process's from training to result.json.
  const FolderLock lock = FolderLock::acquire(c.run_dir, fmt::format("row {} (seed {}): run folder", row.name, row.seed));
  TrainOptions options;
  options.run_dir_locked = true;
  options.progress = progress;
  if (log && !progress) options.log = log;
  const TrainResult trained = train(c, registry, options);
  if (trained.interrupted) throw RowInterrupted(fmt::format("row {} interrupted at step {}", row.name, trained.steps));

  std::string checkpoint = c.run_dir;
  if (c.eval.average_last > 1) {
    const auto n = static_cast<std::size_t>(c.eval.average_last);
    checkpoint = average_last_path(c.run_dir, n).string();
    average_last(c.run_dir, n, checkpoint);
  }
  LoadedModel model = load_model(checkpoint, registry, Device::parse(c.device));
  std::string source = c.data.dev_source, reference = c.data.dev_target;
  if (c.data.synthetic) {
    source = synthetic_corpus_dir(c) + "/dev.src";
    reference = synthetic_corpus_dir(c) + "/dev.tgt";
  }
  ATTNLAB_CHECK(!source.empty(), "row {}: the experiment has no dev set to evaluate on (data.dev_source)", row.name);
  const Evaluation e = evaluate_model(model, source, reference, c.eval);
  write_lines((fs::path(c.run_dir) / "dev.hyp").string(), e.hypotheses);

  RowResult r;
  r.row = row.name;
  r.seed = row.seed;
  r.steps = trained.steps;
  r.parameters = trained.parameters;
  const TrainingSummary stats = read_training_summary(fs::path(c.run_dir) / "metrics.jsonl");
  r.train_seconds = stats.seconds;
  r.tokens_per_second = stats.tokens_per_second;
  r.dev_ppl = e.scores.perplexity();
  r.dev_ppl_smoothed = e.scores.smoothed_perplexity();
  r.bleu = e.bleu.score;
  r.bleu_signature = e.bleu_signature;
  r.bleu_mode = e.bleu_mode;
  r.beam = c.eval.beam;
  r.alpha = c.eval.alpha;
  write_row_result((fs::path(c.run_dir) / "result.json").string(), r);
  if (log) log(fmt::format("{} (seed {}): dev ppl {:.3f}, BLEU {:.2f} ({}), {} parameters, {} steps", row.name, row.seed,
                           r.dev_ppl, r.bleu, r.bleu_mode, r.parameters, r.steps));
  (void)suite;
  return r;
}

SuiteRunSummary run_suite(const Suite& suite, const Registry& registry, const SuiteRunOptions& o) {
  auto log = [&](const std::string& line) {
    if (o.log) o.log(line);
    else fmt::print(stderr, "{}\n", line);
  };
  fs::create_directories(suite.run_dir);
  // Which rows: all, or those named (unknown names are an error listing the suite's rows).
  std::vector<const SuiteRow*> selected;
  for (const std::string& name : o.rows) {
    bool found = false;
    for (const auto& row : suite.rows) found = found || row.name == name;
    if (!found) {
      std::vector<std::string> names;
      for (const auto& row : suite.rows) names.push_back(row.name);
      throw Error(fmt::format("suite {} has no row '{}' (rows: {})", suite.name, name, fmt::join(names, ", ")));
    }
  }
  for (const auto& row : suite.rows)
    if (o.rows.empty() || std::find(o.rows.begin(), o.rows.end(), row.name) != o.rows.end()) selected.push_back(&row);

  // The state of this expansion of the suite; a row whose result exists is done, whatever an
  // earlier suite.json said.
  SuiteState state = make_suite_state(suite);
  auto save_state = [&] { write_suite_state((fs::path(suite.run_dir) / "suite.json").string(), state); };
  auto set_status = [&](const SuiteRow& row, RowStatus status, const std::string& error) {
    if (SuiteRowState* entry = state.find(row.name, row.seed)) entry->status = status, entry->error = error;
    save_state();
  };
  save_state();

  SuiteRunSummary summary;
  std::vector<const SuiteRow*> todo;
  for (const SuiteRow* row : selected) {
    if (!row->skipped.empty()) {
      log(fmt::format("{} (seed {}): skipped (unsupported = \"skip\"): {}", row->name, row->seed, row->skipped));
      ++summary.unsupported;
    } else if (!row->same_as.empty()) {
      log(fmt::format("{} (seed {}): the same run as {} ({}), trained once", row->name, row->seed, row->same_as,
                      row->config.run_dir));
      ++summary.same;
    } else if (fs::exists(fs::path(row->config.run_dir) / "result.json")) {
      log(fmt::format("{} (seed {}): finished earlier, skipped ({})", row->name, row->seed, row->config.run_dir));
      set_status(*row, RowStatus::kDone, "");
      ++summary.skipped;
    } else if (auto holder = FolderLock::holder(row->config.run_dir)) {
      // Trained by another process (a scheduler's task, another `attnlab run`): not a second writer.
      log(fmt::format("{} (seed {}): running in another process (pid {} on {}), skipped", row->name, row->seed,
                      holder->pid, holder->host));
      ++summary.skipped;
    } else {
      todo.push_back(row);
    }
  }

  // A row that is the same run as another: done when that run is.
  auto settle_same_runs = [&] {
    for (const SuiteRow* row : selected)
      if (!row->same_as.empty() && fs::exists(fs::path(row->config.run_dir) / "result.json"))
        set_status(*row, RowStatus::kDone, "");
  };

  if (o.jobs <= 1) {
    for (const SuiteRow* row : todo) {
      log(fmt::format("== {} (seed {}) -> {}", row->name, row->seed, row->config.run_dir));
      set_status(*row, RowStatus::kPending, "");
      try {
        run_row(suite, *row, registry, o.progress, log);
        set_status(*row, RowStatus::kDone, "");
        ++summary.done;
      } catch (const RowInterrupted& e) {
        set_status(*row, RowStatus::kPending, "");
        log(fmt::format("{}; run the same command again to resume", e.what()));
        summary.interrupted = true;
        settle_same_runs();
        return summary;
      } catch (const std::exception& e) {
        set_status(*row, RowStatus::kFailed, e.what());
        log(fmt::format("{} (seed {}) failed: {}", row->name, row->seed, e.what()));
        ++summary.failed;
      }
    }
    settle_same_runs();
    return summary;
  }

  // Several rows at once: one child process per row (`attnlab run SUITE --row NAME@SEED`), at
  // most `jobs` alive, job slot k with its share of the machine (or on devices[k % devices.size()]).
  ATTNLAB_CHECK(!o.program.empty(), "run_suite: jobs > 1 needs the attnlab program path");
  const MachinePlan plan =
      divide_machine(o.cores > 0 ? o.cores : allotted_cpus(), o.gpu_count >= 0 ? o.gpu_count : cuda_device_count(),
                     o.jobs, o.gpus_per_row, o.threads_per_row);
  log(plan.describe());
  std::map<pid_t, std::pair<const SuiteRow*, std::size_t>> children;
  std::vector<bool> slot_busy(static_cast<std::size_t>(o.jobs), false);
  std::size_t next = 0;
  // After an interruption (Ctrl-C reaches the whole process group) no further row starts: the
  // running ones stop at their next step and the suite resumes from there.
  const auto rows_to_start = [&] { return next < todo.size() && !summary.interrupted && !stop_requested(); };
  while (rows_to_start() || !children.empty()) {
    while (rows_to_start() && static_cast<std::int64_t>(children.size()) < o.jobs) {
      std::size_t slot = 0;
      while (slot_busy[slot]) ++slot;
      const SuiteRow* row = todo[next++];
      RowResources share = row_resources(row->config, plan.slots[slot]);
      if (!o.devices.empty()) share.device = o.devices[slot % o.devices.size()], share.visible_gpus.clear();
      std::vector<std::string> argv = {o.program, "run", suite.source_file, "--row", row_key(*row), "--quiet",
                                       "--threads", std::to_string(share.threads)};
      if (share.device != row->config.device) argv.insert(argv.end(), {"--device", share.device});
      const std::string threads = std::to_string(share.threads);
      fs::create_directories(row->config.run_dir);
      const std::string log_path = (fs::path(row->config.run_dir) / "run.log").string();
      const pid_t pid = ::fork();
      ATTNLAB_CHECK(pid >= 0, "run_suite: fork failed");
      if (pid == 0) {
        std::vector<char*> args;
        for (auto& a : argv) args.push_back(a.data());
        args.push_back(nullptr);
        if (std::FILE* f = std::freopen(log_path.c_str(), "a", stderr); f == nullptr) ::_exit(126);
        // OpenMP and OpenBLAS size their pools from these before the row sets its threads.
        ::setenv("OMP_NUM_THREADS", threads.c_str(), 1);
        ::setenv("OPENBLAS_NUM_THREADS", threads.c_str(), 1);
        if (!share.visible_gpus.empty()) ::setenv("CUDA_VISIBLE_DEVICES", share.visible_gpus.c_str(), 1);
        unblock_stop_signals();  // this process has them blocked (install_stop_signal_handlers)
        ::execv(o.program.c_str(), args.data());
        ::_exit(127);
      }
      slot_busy[slot] = true;
      children[pid] = {row, slot};
      set_status(*row, RowStatus::kPending, "");
      log(fmt::format("== {} (seed {}) started on {}{}, {} thread(s) -> {} (log: {})", row->name, row->seed,
                      share.device,
                      share.visible_gpus.empty() ? std::string() : " (GPUs " + share.visible_gpus + ")",
                      share.threads, row->config.run_dir, log_path));
    }
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) break;
    auto it = children.find(pid);
    if (it == children.end()) continue;
    const auto [row, slot] = it->second;
    children.erase(it);
    slot_busy[slot] = false;
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (code == 0 && fs::exists(fs::path(row->config.run_dir) / "result.json")) {
      set_status(*row, RowStatus::kDone, "");
      ++summary.done;
      log(fmt::format("{} (seed {}): done", row->name, row->seed));
    } else if (code == 130) {
      set_status(*row, RowStatus::kPending, "");
      summary.interrupted = true;
    } else {
      set_status(*row, RowStatus::kFailed, fmt::format("exit status {} (see {}/run.log)", code, row->config.run_dir));
      ++summary.failed;
      log(fmt::format("{} (seed {}) failed with exit status {}; see {}/run.log", row->name, row->seed, code,
                      row->config.run_dir));
    }
  }
  if (next < todo.size() && stop_requested()) summary.interrupted = true;  // rows left unstarted
  settle_same_runs();
  return summary;
}

}  // namespace attnlab::nmt
