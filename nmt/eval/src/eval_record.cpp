#include "attnlab/nmt/eval/eval_record.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "attnlab/error.h"
#include "attnlab/nmt/io/event_file.h"
#include "attnlab/nmt/io/file_util.h"

namespace attnlab::nmt {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

fs::path eval_dir(const std::string& run_dir) { return fs::path(run_dir) / "eval"; }

}  // namespace

std::string eval_record_to_json(const EvalRecord& r) {
  json doc{{"set", r.set},
                 {"source", r.source},
                 {"reference", r.reference},
                 {"checkpoint", r.checkpoint},
                 {"step", r.step},
                 {"averaged", r.averaged},
                 {"ppl", r.ppl},
                 {"ppl_smoothed", r.ppl_smoothed},
                 {"tokens", r.tokens},
                 {"bleu", r.bleu},
                 {"bleu_mode", r.bleu_mode},
                 {"bleu_signature", r.bleu_signature},
                 {"sacrebleu", r.sacrebleu},
                 {"sacrebleu_signature", r.sacrebleu_signature},
                 {"beam", r.beam},
                 {"alpha", r.alpha},
                 {"decode_seconds", r.decode_seconds}};
  if (!r.ensemble.empty()) doc["ensemble"] = r.ensemble;
  return doc.dump(2) + "\n";
}

EvalRecord eval_record_from_json(std::string_view json_text, const std::string& source_name) {
  const json doc = json::parse(json_text, nullptr, false);
  ATTNLAB_CHECK(!doc.is_discarded() && doc.is_object(), "{}: not a JSON object (a damaged evaluation record)",
                source_name);
  EvalRecord r;
  try {
    r.set = doc.at("set").get<std::string>();
    r.source = doc.value("source", "");
    r.reference = doc.value("reference", "");
    r.checkpoint = doc.value("checkpoint", "");
    r.step = doc.value("step", std::int64_t{0});
    r.averaged = doc.value("averaged", std::int64_t{0});
    r.ppl = doc.at("ppl").get<double>();
    r.ppl_smoothed = doc.value("ppl_smoothed", 0.0);
    r.tokens = doc.value("tokens", std::int64_t{0});
    r.bleu = doc.at("bleu").get<double>();
    r.bleu_mode = doc.value("bleu_mode", "");
    r.bleu_signature = doc.value("bleu_signature", "");
    r.sacrebleu = doc.value("sacrebleu", 0.0);
    r.sacrebleu_signature = doc.value("sacrebleu_signature", "");
    r.beam = doc.value("beam", r.beam);
    r.alpha = doc.value("alpha", r.alpha);
    r.decode_seconds = doc.value("decode_seconds", 0.0);
    r.ensemble = doc.value("ensemble", std::vector<std::string>{});
  } catch (const json::exception& e) {
    throw Error(fmt::format("{}: {}", source_name, e.what()));
  }
  return r;
}

std::string write_eval_record(const std::string& run_dir, const EvalRecord& record, const std::string& hypotheses) {
  ATTNLAB_CHECK(!record.set.empty() && record.set.find('/') == std::string::npos,
                "evaluation record: '{}' is not a set name", record.set);
  const fs::path dir = eval_dir(run_dir);
  if (!hypotheses.empty()) detail::write_file_atomic((dir / (record.set + ".hyp")).string(), hypotheses);
  const std::string path = (dir / (record.set + ".json")).string();
  detail::write_file_atomic(path, eval_record_to_json(record));
  // The figures also go to TensorBoard, beside the run's training curves, at the evaluated step.
  if (event_files_built()) {
    EventFileWriter events(run_dir, "eval-" + record.set);
    events.scalar(record.set + "/bleu", record.step, record.bleu);
    events.scalar(record.set + "/ppl", record.step, record.ppl);
  }
  return path;
}

std::map<std::string, EvalRecord> read_eval_records(const std::string& run_dir) {
  std::map<std::string, EvalRecord> out;
  const fs::path dir = eval_dir(run_dir);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".json" || entry.path().filename().string().starts_with(".")) continue;
    const std::string path = entry.path().string();
    EvalRecord r = eval_record_from_json(detail::read_file_bytes(path, "evaluation record"), path);
    out[r.set] = std::move(r);
  }
  return out;
}

}  // namespace attnlab::nmt
