#pragma once
// What `attnlab eval` leaves in a run folder: one record per evaluated set, so that the figures of
// a run (test BLEU above all) are kept beside its checkpoints and `attnlab report` can show them.
//
//   <run_dir>/eval/<set>.json   EvalRecord as JSON (keys named as the fields)
//   <run_dir>/eval/<set>.hyp    the translations, one per line
//   <run_dir>/events.out.tfevents.*.eval-<set>   <set>/bleu and <set>/ppl for TensorBoard
//
// <set> is "dev" or "test" for the run's own sets, otherwise the name of the source file, with
// "-ensemble" appended when several models were evaluated as one. Written
// atomically; a later evaluation of the same set replaces both files.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace attnlab::nmt {

struct EvalRecord {
  std::string set;                 // "dev", "test", or the source file's name
  std::string source, reference;   // the files evaluated
  std::string checkpoint;          // the checkpoint file (an average-last-N file when averaged)
  std::int64_t step = 0;
  std::int64_t averaged = 0;       // checkpoints averaged (0: one checkpoint)
  double ppl = 0.0;                // per wordpiece, no label smoothing
  double ppl_smoothed = 0.0;
  std::int64_t tokens = 0;         // reference pieces scored
  double bleu = 0.0;
  std::string bleu_mode, bleu_signature;
  double sacrebleu = 0.0;          // sacreBLEU's default (13a) score of the same output
  std::string sacrebleu_signature;
  std::int64_t beam = 4;
  double alpha = 0.6;
  double decode_seconds = 0.0;
  std::vector<std::string> ensemble;  // the members' checkpoints when an ensemble was evaluated
};

std::string eval_record_to_json(const EvalRecord& record);
EvalRecord eval_record_from_json(std::string_view json_text, const std::string& source_name);

// Writes RUN/eval/<set>.json and, with hypotheses, RUN/eval/<set>.hyp; returns the JSON path.
std::string write_eval_record(const std::string& run_dir, const EvalRecord& record, const std::string& hypotheses);
// Every RUN/eval/*.json by set; an unreadable record throws attnlab::Error naming it.
std::map<std::string, EvalRecord> read_eval_records(const std::string& run_dir);

}  // namespace attnlab::nmt
