#pragma once
// A suite as one Slurm job array: one array task per (row, seed) that still needs work, each task
// running the resumable row runner (`attnlab run SUITE --row NAME@SEED`) against the shared run
// folder. Submitting again sends only what is neither finished, nor running, nor queued, so a
// cancelled, preempted or failed row resumes from its last checkpoint and nothing runs twice.
//
// <run_dir>/slurm/array-<time>.sh   every script submitted
// <run_dir>/slurm/jobs.tsv          job id, task, row, seed, row folder: which task ran which row
// <run_dir>/slurm/<job>_<task>.out  what Slurm itself printed for a task (the row's own log is
//                                   <row dir>/run.log)
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "attnlab/nmt/suite/suite.h"

namespace attnlab::nmt {

struct SlurmSubmitOptions {
  SlurmSettings settings;          // [suite.slurm] with the command line's flags over it
  std::vector<std::string> rows;   // names to submit (empty: all)
  std::string program;             // the attnlab executable the tasks run
  std::string workdir;             // where the tasks start (the suite's relative paths hold there)
  bool dry_run = false;            // print the script, submit nothing
  bool no_prune = false;           // a search's rows trained to their end (run --no-prune)
};

// One row of the suite and what submission decided for it.
struct SubmitDecision {
  const SuiteRow* row = nullptr;
  std::string reason;  // "done", "running (pid 12 on node3)", "queued (Slurm 41_2)", or "" (submitted)
};

struct SlurmSubmission {
  std::vector<SubmitDecision> rows;
  std::string script;      // the sbatch script (empty when nothing needed work)
  std::string script_path; // where it was written (not in a dry run)
  std::string job_id;      // the array's job id (not in a dry run)
  std::size_t submitted() const;
};

// The sbatch script for `rows` (one array task each, in order).
std::string sbatch_script(const Suite& suite, const std::vector<const SuiteRow*>& rows,
                          const SlurmSubmitOptions& options);

// Decides, writes and submits (sbatch --parsable). Throws an Error when sbatch is missing or
// refuses the script (its message included).
SlurmSubmission submit_to_slurm(const Suite& suite, const SlurmSubmitOptions& options);

// The job name of a suite's arrays: "attnlab-<suite>-<6 hex digits of the run folder>".
std::string slurm_job_name(const Suite& suite);
std::string slurm_job_name(const std::string& suite_name, const std::string& run_dir);

// A task of the suite's arrays as Slurm sees it now (squeue).
struct SlurmTask {
  std::string id;       // "41_2"
  std::string state;    // "PENDING", "RUNNING", ...
  std::string reason;   // squeue's reason ("Resources", "Priority", "None")
};

// The suite's tasks still in Slurm's queue, by the name of the row folder each runs (from
// jobs.tsv; tasks it does not know are left out); nullopt when squeue is not installed or fails (no
// controller reachable): callers then go by the run folders alone.
std::optional<std::map<std::string, SlurmTask>> queued_slurm_tasks(const std::string& suite_name,
                                                                   const std::string& run_dir);

}  // namespace attnlab::nmt
