#pragma once
// Runs a suite: every row trained (resuming an interrupted one) and evaluated, each in its own
// folder named by row, seed and configuration hash. A finished row (its result.json exists) is
// skipped, a changed row gets a new hash and is trained afresh, a failing row is recorded and the
// suite goes on.
#include <functional>
#include <string>
#include <vector>

#include "attnlab/error.h"
#include "attnlab/nmt/suite/suite.h"
#include "attnlab/plugin/registry.h"

namespace attnlab::nmt {

struct SuiteRunOptions {
  std::vector<std::string> rows;     // names to run (empty: all)
  std::int64_t jobs = 1;             // rows at once (child processes)
  std::vector<std::string> devices;  // one per job slot, e.g. cuda:0,cuda:1 (empty: each row's own)
  // How the machine is divided among the jobs (machine_share.h): rows that leave threads at 0
  // get cores / jobs threads (threads_per_row > 0: that many), cuda rows gpus_per_row GPUs of
  // their own. cores 0: allotted_cpus(); gpu_count -1: the GPUs CUDA sees.
  std::int64_t gpus_per_row = 1;
  std::int64_t threads_per_row = 0;
  std::int64_t cores = 0;
  std::int64_t gpu_count = -1;
  std::string program;               // the attnlab executable, for child processes (jobs > 1)
  std::function<void(const std::string&)> log;
  bool progress = true;
};

struct SuiteRunSummary {
  std::int64_t done = 0, skipped = 0, failed = 0;
  std::int64_t unsupported = 0;  // rows skipped because their plugin cannot serve them
  std::int64_t same = 0;         // rows that are the same run as an earlier row
  bool interrupted = false;
};

// Thrown by run_row when training was interrupted (Ctrl-C); the row resumes on the next run.
class RowInterrupted : public Error {
 public:
  using Error::Error;
};

// Trains and evaluates one row in its folder (result.json written last). Throws on failure.
RowResult run_row(const Suite& suite, const SuiteRow& row, const Registry& registry, bool progress,
                  const std::function<void(const std::string&)>& log);

SuiteRunSummary run_suite(const Suite& suite, const Registry& registry, const SuiteRunOptions& options);

}  // namespace attnlab::nmt
