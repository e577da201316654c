// search.json's text (search_state.h): written whole, read back only when every field is what the
// writer could have written, so that nothing that indexes with it (the rule, `attnlab status`, the
// report) reads out of range. A damaged file is an Error naming the file and the field.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <set>
#include <sstream>

#include <fmt/core.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attnlab/error.h"
#include "attnlab/nmt/suite/search_state.h"

namespace attnlab::nmt {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The fields of one JSON object of the file, each read with its place ("rows[3].allowed") for
// the message when it is missing, of another type or out of range.
class Fields {
 public:
  Fields(const std::string& file, const json& object, std::string place,
         std::initializer_list<const char*> known)
      : file_(file), object_(object), place_(std::move(place)) {
    if (!object.is_object()) fail("", fmt::format("expected an object, got {}", object.type_name()));
    for (const auto& [key, value] : object.items()) {
      bool ok = false;
      for (const char* k : known) ok = ok || key == k;
      if (!ok) fail(key, fmt::format("unknown field (the fields here: {})", fmt::join(known, ", ")));
    }
  }

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    std::string at = place_;
    if (!key.empty()) at += (at.empty() ? "" : ".") + key;
    throw Error(fmt::format("{}: {}{}{}", file_, at, at.empty() ? "" : ": ", what));
  }

  bool has(const char* key) const { return object_.contains(key); }

  const json& at(const char* key) const {
    const auto it = object_.find(key);
    if (it == object_.end()) fail(key, "missing");
    return *it;
  }

  std::string text(const char* key, const std::string& fallback = {}, bool required = false) const {
    if (!has(key) && !required) return fallback;
    const json& v = at(key);
    if (!v.is_string()) fail(key, fmt::format("expected a string, got {}", v.type_name()));
    return v.get<std::string>();
  }

  bool boolean(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    const json& v = at(key);
    if (!v.is_boolean()) fail(key, fmt::format("expected true or false, got {}", v.type_name()));
    return v.get<bool>();
  }

  std::int64_t integer(const json& v, const std::string& key, std::int64_t min, std::int64_t max) const {
    const bool whole = v.is_number_integer() &&
                       (!v.is_number_unsigned() ||
                        v.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()));
    if (!whole) fail(key, fmt::format("expected a whole number, got {}", v.dump()));
    const auto n = v.get<std::int64_t>();
    if (n < min || n > max) fail(key, fmt::format("{} is out of range ({} .. {})", n, min, max));
    return n;
  }

  std::int64_t integer(const char* key, std::int64_t min, std::int64_t max) const {
    return integer(at(key), key, min, max);
  }

  template <typename E, std::size_t N>
  E choice(const char* key, const NameTable<E, N>& table) const {
    const std::string name = text(key, {}, true);
    const std::optional<E> value = table.find(name);
    if (!value) fail(key, table.unknown(name));
    return *value;
  }

 private:
  const std::string& file_;
  const json& object_;
  std::string place_;
};

// A metric as the search records it: a number in the metric's range, or null (not a number).
std::optional<double> read_metric(const Fields& f, const json& v, const std::string& key, SearchMetric metric) {
  if (v.is_null()) return std::nullopt;
  if (!v.is_number()) f.fail(key, fmt::format("expected a number or null, got {}", v.type_name()));
  const double x = v.get<double>();
  const bool ok = metric == SearchMetric::dev_bleu ? x >= 0.0 && x <= 100.0 : x > 0.0 && std::isfinite(x);
  if (!ok)
    f.fail(key, fmt::format("{} {} is out of range ({})", search_metric_name(metric), v.dump(),
                            metric == SearchMetric::dev_bleu ? "0 .. 100" : "> 0"));
  return x;
}

SearchRowState read_row(const std::string& file, const json& j, std::size_t index, const SearchState& s) {
  const Fields f(file, j, fmt::format("rows[{}]", index), {"key", "dir", "metrics", "allowed", "failed", "error", "no_prune"});
  SearchRowState row;
  row.key = f.text("key", {}, true);
  if (row.key.empty()) f.fail("key", "empty");
  row.dir = f.text("dir");
  const json& metrics = f.at("metrics");
  if (!metrics.is_array()) f.fail("metrics", fmt::format("expected an array, got {}", metrics.type_name()));
  if (metrics.size() > s.rungs.size())
    f.fail("metrics", fmt::format("{} values for a search of {} rungs", metrics.size(), s.rungs.size()));
  for (std::size_t k = 0; k < metrics.size(); ++k)
    row.metrics.push_back(read_metric(f, metrics[k], fmt::format("metrics[{}]", k), s.metric));
  // A row may train at most to the rung above the last one it was measured at, and to no rung
  // beyond the last.
  const std::int64_t top = std::min<std::int64_t>(row.reached(), static_cast<std::int64_t>(s.rungs.size()) - 1);
  row.allowed = f.has("allowed") ? f.integer("allowed", 0, top) : 0;
  row.failed = f.boolean("failed", false);
  row.error = f.text("error");
  row.no_prune = f.boolean("no_prune", false);
  return row;
}

}  // namespace

std::string search_state_to_json(const SearchState& state) {
  json rows = json::array();
  for (const SearchRowState& r : state.rows) {
    json metrics = json::array();
    for (const auto& m : r.metrics) metrics.push_back(m ? json(*m) : json(nullptr));
    rows.push_back({{"key", r.key}, {"dir", r.dir}, {"metrics", metrics}, {"allowed", r.allowed},
                    {"failed", r.failed}, {"error", r.error}, {"no_prune", r.no_prune}});
  }
  const json j = {{"method", std::string(kSearchMethods.name(state.method))},
                  {"metric", std::string(search_metric_name(state.metric))},
                  {"eta", state.eta},
                  {"rungs", state.rungs},
                  {"rows", rows}};
  return j.dump(2) + "\n";
}

SearchState search_state_from_json(std::string_view text, const std::string& source_name) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    throw Error(fmt::format("{}: not valid JSON: {}", source_name, e.what()));
  }
  const Fields f(source_name, doc, "", {"method", "metric", "eta", "rungs", "rows"});
  SearchState s;
  s.method = f.choice("method", kSearchMethods);
  s.metric = f.choice("metric", kSearchMetrics);
  s.eta = f.integer("eta", 2, 1 << 20);
  const json& rungs = f.at("rungs");
  if (!rungs.is_array() || rungs.empty()) f.fail("rungs", "expected a non-empty array of step counts");
  for (std::size_t k = 0; k < rungs.size(); ++k) {
    const std::int64_t min = s.rungs.empty() ? 1 : s.rungs.back() + 1;  // rising
    s.rungs.push_back(f.integer(rungs[k], fmt::format("rungs[{}]", k), min, std::numeric_limits<std::int64_t>::max()));
  }
  const json& rows = f.at("rows");
  if (!rows.is_array()) f.fail("rows", fmt::format("expected an array, got {}", rows.type_name()));
  std::set<std::string> keys;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    s.rows.push_back(read_row(source_name, rows[i], i, s));
    if (!keys.insert(s.rows.back().key).second)
      f.fail(fmt::format("rows[{}].key", i), fmt::format("'{}' is there twice", s.rows.back().key));
  }
  return s;
}

std::string search_state_path(const Suite& suite) { return (fs::path(suite.run_dir) / "search.json").string(); }

std::optional<SearchState> read_search_state(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in.good()) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return search_state_from_json(ss.str(), path);
}

}  // namespace attnlab::nmt
