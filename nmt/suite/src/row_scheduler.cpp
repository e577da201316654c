#include "row_scheduler.h"

#include <filesystem>

#include <fmt/core.h>

#include "attnlab/nmt/io/folder_lock.h"
#include "attnlab/nmt/io/file_util.h"
#include "attnlab/nmt/train/stop_signals.h"

namespace attnlab::nmt {
namespace {

namespace fs = std::filesystem;

fs::path row_error_file(const SuiteRow& row) { return fs::path(row.config.run_dir) / "row-error.txt"; }

}  // namespace

RowTurn run_row_turn(const Suite& suite, const SuiteRow& row, const Registry& registry, const RowRunOptions& o) {
  RowTurn turn;
  try {
    const RowOutcome out = run_row(suite, row, registry, o);
    turn.end = out.result ? RowEnd::finished : RowEnd::held;
    turn.held_at_rung = out.held_at_rung;
  } catch (const RowInterrupted& e) {
    turn.end = RowEnd::interrupted;
    turn.error = e.what();
  } catch (const FolderInUse& e) {
    // Another process trains the row: its folder, row-error.txt included, is that process's.
    turn.end = RowEnd::lost;
    turn.error = e.what();
    return turn;
  } catch (const std::exception& e) {
    turn.end = RowEnd::failed;
    turn.error = e.what();
  }
  std::error_code ignored;
  if (turn.end == RowEnd::failed) {
    try {
      detail::write_file_atomic(row_error_file(row).string(), turn.error + "\n");
    } catch (const std::exception&) {  // the error still reaches the log and suite.json
    }
  } else {
    fs::remove(row_error_file(row), ignored);
  }
  return turn;
}

int row_end_exit_code(RowEnd end) {
  switch (end) {
    case RowEnd::finished: return 0;
    case RowEnd::held: return 75;
    case RowEnd::lost: return 74;
    case RowEnd::interrupted: return 130;
    case RowEnd::failed: break;
  }
  return 1;
}

RowEnd row_end_of_exit_code(int code) {
  for (const RowEnd end : {RowEnd::finished, RowEnd::held, RowEnd::lost, RowEnd::interrupted})
    if (row_end_exit_code(end) == code) return end;
  return RowEnd::failed;
}

void SuiteRun::record_start(const SuiteRow& row) { set_status(row, RowStatus::kPending, ""); }

void SuiteRun::record(const SuiteRow& row, const RowTurn& turn) {
  const std::string who = fmt::format("{} (seed {})", row.name, row.seed);
  switch (turn.end) {
    case RowEnd::finished:
      set_status(row, RowStatus::kDone, "");
      ++summary.done;
      log(fmt::format("{}: done", who));
      break;
    case RowEnd::held:
      set_status(row, RowStatus::kPending, "");
      log(turn.held_at_rung >= 0 ? fmt::format("{}: held at rung {} by the search", who, turn.held_at_rung)
                                 : fmt::format("{}: held at a rung by the search (its run.log says which)", who));
      break;
    case RowEnd::lost:
      // Not this run's row any more: suite.json keeps what it said, the other process writes it.
      ++summary.skipped;
      log(fmt::format("{}: trained by another process, passed over ({})", who, turn.error));
      break;
    case RowEnd::failed:
      set_status(row, RowStatus::kFailed, turn.error);
      ++summary.failed;
      log(fmt::format("{} failed: {}", who, turn.error));
      break;
    case RowEnd::interrupted:
      set_status(row, RowStatus::kPending, "");
      summary.interrupted = true;
      log(fmt::format("{}: interrupted{}; run the same command again to resume", who,
                      turn.error.empty() ? "" : " (" + turn.error + ")"));
      break;
  }
}

void schedule_rows(SuiteRun& run, const RowPicker& pick, RowExecutor& executor) {
  std::set<std::string> passed_over;  // failed or lost in this run
  std::set<std::string> running;
  const auto excluded = [&] {
    std::set<std::string> keys = passed_over;
    keys.insert(running.begin(), running.end());
    return keys;
  };
  for (;;) {
    while (running.size() < executor.slots()) {
      if (run.summary.interrupted || stop_requested()) {
        // A row left unstarted by Ctrl-C: the suite is interrupted, to resume next time.
        if (pick(excluded())) run.summary.interrupted = true;
        break;
      }
      const SuiteRow* row = pick(excluded());
      if (!row) break;
      run.record_start(*row);
      try {
        executor.start(*row);
      } catch (const std::exception& e) {
        run.record(*row, {RowEnd::failed, -1, e.what()});
        passed_over.insert(row_key(*row));
        continue;
      }
      running.insert(row_key(*row));
    }
    if (running.empty()) break;
    const RowExecutor::Ended ended = executor.wait();
    const std::string key = row_key(*ended.row);
    running.erase(key);
    run.record(*ended.row, ended.turn);
    if (ended.turn.end == RowEnd::failed || ended.turn.end == RowEnd::lost) passed_over.insert(key);
  }
}

void InProcessRows::start(const SuiteRow& row) {
  const RowRunOptions options = options_for_(row);
  if (options.log) options.log(fmt::format("== {} (seed {}) -> {}", row.name, row.seed, row.config.run_dir));
  ended_ = {&row, run_row_turn(suite_, row, registry_, options)};
}

}  // namespace attnlab::nmt
