#pragma once
// The files a suite run leaves behind, as `attnlab run` writes them and `attnlab report` reads
// them (layout in suite.h):
//
//   <run_dir>/suite.json      SuiteState: {"name", "source", "reference", "rows": [{"name", "seed",
//                             "hash", "dir" (relative to run_dir), "settings": [[key, value], ...],
//                             "paper": {"ppl", "bleu", "params_m"} or null, "status":
//                             "pending" | "done" | "failed" | "skipped", "error" (why it failed or
//                             was skipped), "same_as" (the row whose run folder it shares, or "")}]}
//   <row dir>/result.json     RowResult: its fields as JSON keys with the same names
//
// Both are written atomically (atomic_file.h). The readers are tolerant: missing optional keys
// take their defaults, unknown keys are ignored, and an unknown status reads as pending. A
// malformed file throws attnlab::Error naming the path.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attnlab/name_table.h"
#include "attnlab/nmt/suite/suite.h"

namespace attnlab::nmt {

enum class RowStatus { kPending, kDone, kFailed, kSkipped };
inline constexpr auto kRowStatuses = name_table<RowStatus>("row status", {{RowStatus::kPending, "pending"},
                                                                        {RowStatus::kDone, "done"},
                                                                        {RowStatus::kFailed, "failed"},
                                                                        {RowStatus::kSkipped, "skipped"}});

std::string_view row_status_name(RowStatus status);
RowStatus parse_row_status(std::string_view name);  // an Error for an unknown name (suite.json's reader
                                                    // reads one as kPending)

// One entry of suite.json's "rows": a (row, seed) run and where it stands.
struct SuiteRowState {
  std::string name;
  std::uint64_t seed = 1;
  std::string hash;
  std::string dir;  // relative to the run folder: "<name>-s<seed>-<hash>"
  std::vector<std::pair<std::string, std::string>> settings;
  std::optional<PaperReference> paper;
  RowStatus status = RowStatus::kPending;
  std::string error;    // why it failed (kFailed) or was skipped (kSkipped)
  std::string same_as;  // the earlier row whose run (dir) this one is; empty for a run of its own
};

struct SuiteState {
  std::string name;
  std::string source;     // the suite file
  std::string reference;  // e.g. "Vaswani et al. 2017, Table 3"
  std::vector<SuiteRowState> rows;

  // The entry of (name, seed), nullptr when absent.
  SuiteRowState* find(std::string_view name, std::uint64_t seed);
};

// The initial state of a loaded suite: every row pending (skipped rows skipped, with the reason),
// dir = the folder name of the row's run_dir (the first row's for rows that are the same run).
SuiteState make_suite_state(const Suite& suite);

// JSON text (pretty-printed, 2 spaces) and back.
std::string suite_state_to_json(const SuiteState& state);
SuiteState suite_state_from_json(std::string_view json_text, const std::string& source_name = "suite.json");
void write_suite_state(const std::string& path, const SuiteState& state);
SuiteState read_suite_state(const std::string& path);

std::string row_result_to_json(const RowResult& result);
RowResult row_result_from_json(std::string_view json_text, const std::string& source_name = "result.json");
void write_row_result(const std::string& path, const RowResult& result);
RowResult read_row_result(const std::string& path);

}  // namespace attnlab::nmt
