#include "attnlab/nmt/suite/suite_results.h"

#include <filesystem>

#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "attnlab/error.h"
#include "attnlab/nmt/io/file_util.h"

namespace attnlab::nmt {
namespace {

using nlohmann::json;

template <typename T>
T get_or(const json& j, const char* key, T fallback) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  return it->get<T>();
}

std::optional<double> opt_number(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

json paper_json(const std::optional<PaperReference>& p) {
  if (!p) return nullptr;
  json out = json::object();
  out["ppl"] = p->ppl ? json(*p->ppl) : json(nullptr);
  out["bleu"] = p->bleu ? json(*p->bleu) : json(nullptr);
  out["params_m"] = p->params_m ? json(*p->params_m) : json(nullptr);
  return out;
}

json parse_json(std::string_view text, const std::string& source) {
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    throw Error(fmt::format("{}: not valid JSON: {}", source, e.what()));
  }
}

}  // namespace

std::string_view row_status_name(RowStatus status) { return kRowStatuses.name(status); }

RowStatus parse_row_status(std::string_view name) { return kRowStatuses.parse(name); }

SuiteRowState* SuiteState::find(std::string_view row_name, std::uint64_t seed) {
  for (auto& r : rows)
    if (r.name == row_name && r.seed == seed) return &r;
  return nullptr;
}

SuiteState make_suite_state(const Suite& suite) {
  SuiteState state;
  state.name = suite.name;
  state.source = suite.source_file;
  state.reference = suite.reference;
  for (const SuiteRow& row : suite.rows) {
    SuiteRowState r;
    r.name = row.name;
    r.seed = row.seed;
    r.hash = row.hash;
    r.dir = std::filesystem::path(row.config.run_dir).filename().string();
    r.same_as = row.same_as;
    if (!row.skipped.empty()) r.status = RowStatus::kSkipped, r.error = row.skipped;
    r.settings = row.settings;
    r.paper = row.paper;
    state.rows.push_back(std::move(r));
  }
  return state;
}

std::string suite_state_to_json(const SuiteState& state) {
  json rows = json::array();
  for (const SuiteRowState& r : state.rows) {
    json settings = json::array();
    for (const auto& [k, v] : r.settings) settings.push_back(json::array({k, v}));
    rows.push_back(json{{"name", r.name},
                        {"seed", r.seed},
                        {"hash", r.hash},
                        {"dir", r.dir},
                        {"settings", settings},
                        {"paper", paper_json(r.paper)},
                        {"status", std::string(row_status_name(r.status))},
                        {"error", r.error},
                        {"same_as", r.same_as}});
  }
  const json doc{{"name", state.name}, {"source", state.source}, {"reference", state.reference}, {"rows", rows}};
  return doc.dump(2) + "\n";
}

SuiteState suite_state_from_json(std::string_view json_text, const std::string& source_name) {
  const json doc = parse_json(json_text, source_name);
  try {
    ATTNLAB_CHECK(doc.is_object(), "{}: expected a JSON object", source_name);
    SuiteState state;
    state.name = get_or<std::string>(doc, "name", "");
    state.source = get_or<std::string>(doc, "source", "");
    state.reference = get_or<std::string>(doc, "reference", "");
    const auto rows = doc.find("rows");
    if (rows != doc.end() && rows->is_array()) {
      for (const json& j : *rows) {
        ATTNLAB_CHECK(j.is_object(), "{}: every entry of \"rows\" must be an object", source_name);
        SuiteRowState r;
        r.name = get_or<std::string>(j, "name", "");
        ATTNLAB_CHECK(!r.name.empty(), "{}: a row without a \"name\"", source_name);
        r.seed = get_or<std::uint64_t>(j, "seed", 1);
        r.hash = get_or<std::string>(j, "hash", "");
        r.dir = get_or<std::string>(j, "dir", "");
        if (r.dir.empty()) r.dir = fmt::format("{}-s{}-{}", r.name, r.seed, r.hash);
        if (const auto s = j.find("settings"); s != j.end() && s->is_array()) {
          for (const json& kv : *s) {
            if (kv.is_array() && kv.size() == 2)
              r.settings.emplace_back(kv[0].get<std::string>(),
                                      kv[1].is_string() ? kv[1].get<std::string>() : kv[1].dump());
          }
        }
        if (const auto p = j.find("paper"); p != j.end() && p->is_object())
          r.paper = PaperReference{opt_number(*p, "ppl"), opt_number(*p, "bleu"), opt_number(*p, "params_m")};
        // A status this version does not know (a later one's) reads as pending: the row's own
        // folder says where it stands.
        r.status = kRowStatuses.find(get_or<std::string>(j, "status", "pending")).value_or(RowStatus::kPending);
        r.error = get_or<std::string>(j, "error", "");
        r.same_as = get_or<std::string>(j, "same_as", "");
        state.rows.push_back(std::move(r));
      }
    }
    return state;
  } catch (const json::exception& e) {
    throw Error(fmt::format("{}: unexpected value: {}", source_name, e.what()));
  }
}

void write_suite_state(const std::string& path, const SuiteState& state) {
  detail::write_file_atomic(path, suite_state_to_json(state));
}

SuiteState read_suite_state(const std::string& path) {
  return suite_state_from_json(detail::read_file_bytes(path, "suite state"), path);
}

std::string row_result_to_json(const RowResult& r) {
  const json doc{{"row", r.row},
                 {"seed", r.seed},
                 {"steps", r.steps},
                 {"parameters", r.parameters},
                 {"train_seconds", r.train_seconds},
                 {"tokens_per_second", r.tokens_per_second},
                 {"dev_ppl", r.dev_ppl},
                 {"dev_ppl_smoothed", r.dev_ppl_smoothed},
                 {"bleu", r.bleu},
                 {"bleu_signature", r.bleu_signature},
                 {"bleu_mode", r.bleu_mode},
                 {"beam", r.beam},
                 {"alpha", r.alpha}};
  return doc.dump(2) + "\n";
}

RowResult row_result_from_json(std::string_view json_text, const std::string& source_name) {
  const json doc = parse_json(json_text, source_name);
  try {
    ATTNLAB_CHECK(doc.is_object(), "{}: expected a JSON object", source_name);
    RowResult r;
    r.row = get_or<std::string>(doc, "row", "");
    r.seed = get_or<std::uint64_t>(doc, "seed", r.seed);
    r.steps = get_or<std::int64_t>(doc, "steps", 0);
    r.parameters = get_or<std::int64_t>(doc, "parameters", 0);
    r.train_seconds = get_or<double>(doc, "train_seconds", 0.0);
    r.tokens_per_second = get_or<double>(doc, "tokens_per_second", 0.0);
    r.dev_ppl = get_or<double>(doc, "dev_ppl", 0.0);
    r.dev_ppl_smoothed = get_or<double>(doc, "dev_ppl_smoothed", 0.0);
    r.bleu = get_or<double>(doc, "bleu", 0.0);
    r.bleu_signature = get_or<std::string>(doc, "bleu_signature", "");
    r.bleu_mode = get_or<std::string>(doc, "bleu_mode", "");
    r.beam = get_or<std::int64_t>(doc, "beam", r.beam);
    r.alpha = get_or<double>(doc, "alpha", r.alpha);
    return r;
  } catch (const json::exception& e) {
    throw Error(fmt::format("{}: unexpected value: {}", source_name, e.what()));
  }
}

void write_row_result(const std::string& path, const RowResult& result) {
  detail::write_file_atomic(path, row_result_to_json(result));
}

RowResult read_row_result(const std::string& path) {
  return row_result_from_json(detail::read_file_bytes(path, "row result"), path);
}

}  // namespace attnlab::nmt
