// Experiment suites (suite.h): a suite file is read once for its [suite] and [vars] tables, then
// each row is built from fresh parses of the base file and of the suite (moving nodes keeps their
// source positions, which copies would lose), merged table by table and read as an experiment.
#include "attnlab/nmt/suite/suite.h"

#include <xxhash.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/core.h>
#include <fmt/format.h>

#include "attnlab/config/plugin_options.h"
#include "attnlab/config/key_log.h"
#include "attnlab/config/table_reader.h"
#include "attnlab/error.h"
#include "search_toml.h"
#include "suite_toml.h"

namespace attnlab::nmt {
namespace {

namespace fs = std::filesystem;
using config::source_position;
using config::TableReader;
using namespace suite_detail;

std::string read_text(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in.good()) throw Error(fmt::format("{}: cannot open {}", path, what));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool before(const toml::source_region& a, const toml::source_region& b) {
  return std::pair(a.begin.line, a.begin.column) < std::pair(b.begin.line, b.begin.column);
}

// Keys of the experiment that hold paths (relative to the file that names them).
void rebase_paths(toml::table& doc, const fs::path& prefix) {
  if (prefix.empty()) return;
  auto rebase = [&](toml::node* n) {
    if (!n) return;
    if (auto* s = n->as_string(); s && !s->get().empty() && !fs::path(s->get()).is_absolute())
      s->get() = (prefix / s->get()).lexically_normal().string();
  };
  if (auto* e = doc.get_as<toml::table>("experiment")) {
    rebase(e->get("run_dir"));
    if (auto* paths = e->get_as<toml::array>("plugin_paths"))
      for (auto& p : *paths) rebase(&p);
  }
  if (auto* d = doc.get_as<toml::table>("data"))
    for (const char* key : {"train_source", "train_target", "dev_source", "dev_target", "test_source", "test_target",
                            "cache_dir"})
      rebase(d->get(key));
}

// "file:line:column: rest" -> "file:line:column: <label>: rest" (label prepended when no position).
std::string label_error(const std::string& message, const std::string& label, const std::string& fallback_position) {
  static const std::regex positioned(R"(^(.*?:[0-9]+:[0-9]+): )");
  std::smatch m;
  if (std::regex_search(message, m, positioned))
    return fmt::format("{}: {}: {}", m[1].str(), label, message.substr(static_cast<std::size_t>(m.length(0))));
  return fmt::format("{}: {}: {}", fallback_position, label, message);
}

// The most (row, seed) pairs a suite may expand to. Each is a training run, so more is a grid that
// crosses more axes than meant (2^20 rows from 20 axes of two values), not a sweep; it is also about
// the largest Slurm array by default (MaxArraySize 1001).
constexpr std::size_t kMaxRows = 1000;

std::string hash_row(const ExperimentConfig& config, std::uint64_t seed) {
  const std::string text = to_toml(config, /*include_eval=*/false) + fmt::format("\n# seed {}\n", seed);
  return fmt::format("{:016x}", static_cast<std::uint64_t>(XXH3_64bits(text.data(), text.size())));
}

// One row before resolution: where its overrides come from.
struct RowPlan {
  std::string name;
  std::string position;
  std::optional<PaperReference> paper;
  enum class Kind { base, row, grid } kind = Kind::base;
  std::string source;                 // rows.<name> or grids.<name>
  std::vector<std::size_t> indices;   // grid: the value index on each axis
  std::optional<std::vector<std::uint64_t>> seeds;  // the row's own seeds = [...] (else the suite's)
  std::optional<UnsupportedRows> unsupported;  // grid: its unsupported = "..." (else the suite's)
};

class SuiteReader {
 public:
  SuiteReader(const std::string& path, std::vector<std::string> settings)
      : path_(path), text_(read_text(path, "suite file")), settings_(std::move(settings)) {
    dir_ = fs::path(path).parent_path();
    command_line_settings(settings_);  // a malformed setting is refused before anything else
  }

  Suite read() {
    toml::table doc = parse_toml_text(text_, path_);
    if (is_experiment(doc)) return one_experiment(std::move(doc));
    TableReader root(doc, "");
    read_vars(root);
    Suite suite;
    suite.source_file = path_;
    suite.name = fs::path(path_).stem().string();
    std::vector<std::uint64_t> seeds{1};
    UnsupportedRows default_unsupported = UnsupportedRows::error;
    if (auto s = root.table("suite")) {
      suite.name = expanded(*s, "name", suite.name);
      base_file_ = expanded(*s, "base", "");
      if (s->has("seeds")) seeds = read_seeds(*s);
      s->accept("seeds");
      suite.run_dir = expanded(*s, "run_dir", "");
      suite.reference = expanded(*s, "reference", "");
      if (const auto value = read_unsupported(*s, "suite")) default_unsupported = *value;
      if (auto slurm = s->table("slurm")) suite.slurm = read_slurm(*slurm);
      s->finish();
    }
    if (auto t = root.table("search")) {
      search_ = read_search_table(*t);
      suite.search = search_->spec;
    }
    if (!suite.run_dir.empty() && !fs::path(suite.run_dir).is_absolute() && !dir_.empty())
      suite.run_dir = (dir_ / suite.run_dir).lexically_normal().string();
    if (suite.run_dir.empty()) suite.run_dir = (fs::path("runs") / suite.name).string();
    if (!base_file_.empty()) {
      base_rel_ = fs::path(base_file_);
      base_path_ = fs::path(base_file_).is_absolute() ? base_file_ : (dir_ / base_file_).lexically_normal().string();
      base_text_ = read_text(base_path_, fmt::format("base experiment (suite.base in {})", path_));
    }
    if (auto b = root.table("base")) (void)b;
    std::vector<RowPlan> plans = plan_rows(root);
    root.finish();

    std::size_t runs = 0;
    for (const RowPlan& plan : plans) runs += plan.seeds.value_or(seeds).size();
    if (runs > kMaxRows)
      throw Error(fmt::format("{}: the suite expands to {} rows (rows and grid points times their seeds), more than "
                              "the {} a suite may hold",
                              path_, runs, kMaxRows));
    for (const RowPlan& plan : plans)
      for (std::uint64_t seed : plan.seeds.value_or(seeds))
        suite.rows.push_back(resolve(suite, plan, seed, plan.unsupported.value_or(default_unsupported)));
    if (search_) check_search(*search_, suite);
    mark_identical_rows(suite);
    suite.environment = vars_.from_environment();
    return suite;
  }

 private:
  // One experiment's file rather than a suite's: a table of an experiment and none of a suite.
  static bool is_experiment(const toml::table& doc) {
    for (const char* key : {"suite", "base", "rows", "grids", "search", "vars"})
      if (doc.contains(key)) return false;
    for (const char* key : {"experiment", "data", "model", "training"})
      if (doc.contains(key)) return true;
    return false;
  }

  // The experiment as a suite of one row, named after it, in its own run folder.
  Suite one_experiment(toml::table doc) {
    merge(doc, command_line_settings(settings_));
    Suite suite;
    suite.source_file = path_;
    SuiteRow row;
    row.name = "experiment";
    row.position = path_;
    row.config = parse_experiment_table(std::move(doc), path_);
    row.seed = row.config.seed;
    row.hash = hash_row(row.config, row.seed);
    suite.name = row.config.name;
    suite.run_dir = row.config.run_dir;
    suite.rows.push_back(std::move(row));
    return suite;
  }

  std::string expanded(TableReader& t, const std::string& key, const std::string& fallback) {
    const std::string value = t.get_string(key, fallback);
    if (!t.has(key)) return value;
    return vars_.expand(value, fmt::format("{}: {}", t.position(key), t.path(key)));
  }

  SlurmSettings read_slurm(TableReader& t) {
    SlurmSettings o;
    o.partition = expanded(t, "partition", "");
    o.account = expanded(t, "account", "");
    o.qos = expanded(t, "qos", "");
    o.time = expanded(t, "time", "");
    o.gres = expanded(t, "gres", "");
    o.mem = expanded(t, "mem", "");
    o.gpus = t.get_int("gpus", 0);
    o.cpus = t.get_int("cpus", 0);
    o.max_running = t.get_int("max_running", 0);
    for (const char* key : {"gpus", "cpus", "max_running"})
      if (t.has(key) && t.get_int(key, 0) < 0)
        throw Error(fmt::format("{}: {} must be >= 0", t.position(key), t.path(key)));
    for (const char* key : {"sbatch", "setup"}) {
      if (!t.has(key)) continue;
      std::vector<std::string> lines = t.get_strings(key);
      for (std::string& line : lines) line = vars_.expand(line, fmt::format("{}: {}", t.position(key), t.path(key)));
      (std::string_view(key) == "sbatch" ? o.sbatch : o.setup) = std::move(lines);
    }
    t.finish();
    return o;
  }

  void read_vars(TableReader& root) {
    auto v = root.table("vars");
    if (!v) return;
    for (const auto& [k, node] : v->raw()) {
      const std::string name(k.str());
      v->accept(name);
      std::string value;
      if (auto s = node.value_exact<std::string>()) value = *s;
      else if (node.is_integer() || node.is_floating_point() || node.is_boolean()) value = value_text(node);
      else
        throw Error(fmt::format("{}: vars.{}: expected a string, number or boolean", source_position(node.source()),
                                name));
      vars_.define(name, {value, source_position(node.source())});
    }
  }

  std::vector<std::uint64_t> read_seeds(TableReader& s) {
    s.accept("seeds");
    return parse_seeds(*s.raw().get("seeds"), "suite.seeds");
  }

  // seeds = [1, 2]: of the suite, or of one row (its own seeds instead of the suite's).
  static std::vector<std::uint64_t> parse_seeds(const toml::node& n, const std::string& where) {
    config::KeyLog::note(where, "array of integers", "[1]");
    const toml::array* arr = n.as_array();
    std::vector<std::uint64_t> seeds;
    if (arr)
      for (const auto& item : *arr) {
        auto v = item.value_exact<std::int64_t>();
        if (!v || *v < 0) { arr = nullptr; break; }
        seeds.push_back(static_cast<std::uint64_t>(*v));
      }
    if (!arr || seeds.empty())
      throw Error(fmt::format("{}: {}: expected a non-empty array of non-negative integers",
                              source_position(n.source()), where));
    if (std::set<std::uint64_t>(seeds.begin(), seeds.end()).size() != seeds.size())
      throw Error(fmt::format("{}: {}: a seed is listed twice", source_position(n.source()), where));
    return seeds;
  }

  std::vector<RowPlan> plan_rows(TableReader& root) {
    std::vector<RowPlan> plans;
    plans.push_back({"base", path_, std::nullopt, RowPlan::Kind::base, "", {}, std::nullopt, std::nullopt});
    std::set<std::string> names{"base"};
    auto claim = [&](const std::string& name, const std::string& where) {
      if (!names.insert(name).second)
        throw Error(fmt::format("{}: row '{}' is defined twice", where, name));
    };
    if (auto rows = root.table("rows")) {
      std::vector<std::pair<std::string, const toml::table*>> ordered;
      for (const auto& [k, node] : rows->raw()) {
        const std::string name(k.str());
        rows->accept(name);
        const toml::table* t = node.as_table();
        if (!t)
          throw Error(fmt::format("{}: rows.{}: expected a table of overrides ([rows.{}])",
                                  source_position(node.source()), name, name));
        ordered.emplace_back(name, t);
      }
      std::stable_sort(ordered.begin(), ordered.end(),
                       [](const auto& a, const auto& b) { return before(a.second->source(), b.second->source()); });
      for (const auto& [name, t] : ordered) {
        const std::string where =
            source_position(t->source().begin || t->empty() ? t->source() : t->cbegin()->second.source());
        if (name == "base") {  // the implicit base row: only its paper values
          for (const auto& [k, v] : *t)
            if (k.str() != "paper" && k.str() != "seeds")
              throw Error(fmt::format("{}: rows.base.{}: the base row takes only paper = {{ ... }} and seeds = [...]; "
                                      "change its settings in [base] (or the base file)",
                                      source_position(k.source()), k.str()));
          if (const toml::node* paper = t->get("paper")) plans[0].paper = read_paper(*paper, "rows.base.paper");
          if (const toml::node* own = t->get("seeds")) plans[0].seeds = parse_seeds(*own, "rows.base.seeds");
          continue;
        }
        claim(name, where);
        RowPlan plan{name, where, std::nullopt, RowPlan::Kind::row, "rows." + name, {}, std::nullopt, std::nullopt};
        if (const toml::node* paper = t->get("paper")) plan.paper = read_paper(*paper, "rows." + name + ".paper");
        if (const toml::node* own = t->get("seeds")) plan.seeds = parse_seeds(*own, "rows." + name + ".seeds");
        plans.push_back(std::move(plan));
      }
    }
    if (auto grids = root.table("grids")) {
      std::vector<std::pair<std::string, const toml::table*>> ordered;
      for (const auto& [k, node] : grids->raw()) {
        const std::string name(k.str());
        grids->accept(name);
        const toml::table* t = node.as_table();
        if (!t)
          throw Error(fmt::format("{}: grids.{}: expected a table with axes = [...]", source_position(node.source()),
                                  name));
        ordered.emplace_back(name, t);
      }
      std::stable_sort(ordered.begin(), ordered.end(),
                       [](const auto& a, const auto& b) { return before(a.second->source(), b.second->source()); });
      for (const auto& [name, t] : ordered) {
        const std::vector<std::size_t> sizes = grid_sizes(*t, name);
        TableReader grid_reader(*t, "grids." + name);
        const std::optional<UnsupportedRows> unsupported = read_unsupported(grid_reader, "grids." + name);
        std::size_t total = 1;
        for (std::size_t s : sizes) {  // (every size is at least 1; checked before it can overflow)
          if (total > kMaxRows / s)
            throw Error(fmt::format("{}: grids.{}: its axes of {} values cross to more than the {} rows a suite "
                                    "may hold",
                                    source_position(t->source()), name, fmt::join(sizes, " x "), kMaxRows));
          total *= s;
        }
        const int width = total >= 100 ? static_cast<int>(std::to_string(total).size()) : 2;
        std::vector<std::size_t> index(sizes.size(), 0);
        for (std::size_t i = 0; i < total; ++i) {
          const std::string row_name = fmt::format("{}-{:0{}}", name, i + 1, width);
          claim(row_name, source_position(t->source()));
          plans.push_back({row_name, source_position(t->source()), std::nullopt, RowPlan::Kind::grid,
                           "grids." + name, index, std::nullopt, unsupported});
          for (std::size_t a = sizes.size(); a-- > 0;) {  // the last axis varies fastest
            if (++index[a] < sizes[a]) break;
            index[a] = 0;
          }
        }
      }
    }
    root.accept("base");
    return plans;
  }

  // unsupported = "error" | "fallback" | "skip" (nothing when the table does not set it).
  static std::optional<UnsupportedRows> read_unsupported(TableReader& t, const std::string& where) {
    if (!t.has("unsupported")) return std::nullopt;
    const std::string value = t.get_string("unsupported", "");
    const std::optional<UnsupportedRows> known = kUnsupportedRows.find(value);
    if (!known)
      throw Error(fmt::format("{}: {}.unsupported: {}", t.position("unsupported"), where, kUnsupportedRows.unknown(value)));
    return known;
  }

  PaperReference read_paper(const toml::node& node, const std::string& where) {
    config::KeyLog::note(where, "table", "");
    const toml::table* t = node.as_table();
    if (!t)
      throw Error(fmt::format("{}: {}: expected a table {{ ppl = ..., bleu = ..., params_m = ... }}",
                              source_position(node.source()), where));
    TableReader r(*t, where);
    PaperReference p;
    for (const char* key : {"ppl", "bleu", "params_m"}) r.accept(key);
    if (r.has("ppl")) p.ppl = r.get_real("ppl", 0.0);
    if (r.has("bleu")) p.bleu = r.get_real("bleu", 0.0);
    if (r.has("params_m")) p.params_m = r.get_real("params_m", 0.0);
    r.finish();
    return p;
  }

  // Each axis's length; keys within an axis must have equal lengths.
  std::vector<std::size_t> grid_sizes(const toml::table& grid, const std::string& name) {
    TableReader r(grid, "grids." + name);
    r.accept("axes");
    r.accept("unsupported");
    r.finish();
    const toml::node* axes_node = grid.get("axes");
    const toml::array* axes = axes_node ? axes_node->as_array() : nullptr;
    if (!axes || axes->empty())
      throw Error(fmt::format("{}: grids.{}.axes: expected a non-empty array of tables "
                              "(axes = [ {{ \"model.heads\" = [1, 4] }} ])",
                              source_position(axes_node ? axes_node->source() : grid.source()), name));
    std::vector<std::size_t> sizes;
    for (std::size_t a = 0; a < axes->size(); ++a) {
      const toml::node& axis_node = *axes->get(a);
      const std::string where = fmt::format("grids.{}.axes[{}]", name, a);
      const toml::table* axis = axis_node.as_table();
      if (!axis || axis->empty())
        throw Error(fmt::format("{}: {}: expected a table of key = [values...]", source_position(axis_node.source()),
                                where));
      std::vector<std::pair<std::string, const toml::node*>> leaves;
      flatten(*axis, "", leaves);
      if (leaves.empty())  // only empty tables: an axis of no values would drop the whole grid
        throw Error(fmt::format("{}: {}: expected a table of key = [values...]", source_position(axis_node.source()),
                                where));
      std::size_t size = 0;
      std::string first;
      for (const auto& [key, leaf] : leaves) {
        const toml::array* values = leaf->as_array();
        if (!values || values->empty())
          throw Error(fmt::format("{}: {}.{}: expected a non-empty array of values", source_position(leaf->source()),
                                  where, key));
        if (first.empty()) {
          first = key;
          size = values->size();
        } else if (values->size() != size) {
          throw Error(fmt::format("{}: {}.{}: {} values, but '{}' has {} (keys of one axis are tied: give them "
                                  "equal lengths, or put them on separate axes)",
                                  source_position(leaf->source()), where, key, values->size(), first, size));
        }
      }
      sizes.push_back(size);
    }
    return sizes;
  }

  // A fresh parse of the suite with variables expanded (everything but [vars] itself).
  toml::table fresh_suite() {
    toml::table doc = parse_toml_text(text_, path_);
    for (auto&& [k, v] : doc)
      if (k.str() != "vars") vars_.expand_all(v, std::string(k.str()));
    return doc;
  }

  toml::table fresh_base() {
    if (base_path_.empty()) return {};
    toml::table doc = parse_toml_text(base_text_, base_path_);
    vars_.expand_all(doc, "");
    rebase_paths(doc, base_rel_.parent_path());
    return doc;
  }

  // The row's overrides as one nested table, and its settings (dotted key -> value as written).
  toml::table overrides(toml::table& suite_doc, const RowPlan& plan,
                        std::vector<std::pair<std::string, std::string>>& settings) {
    toml::table out;
    if (plan.kind == RowPlan::Kind::row) {
      toml::table& row = *suite_doc["rows"][plan.name].as_table();
      std::vector<std::pair<std::string, const toml::node*>> leaves;
      flatten(row, "", leaves);
      for (const auto& [key, node] : leaves)
        if (!key.starts_with("paper.") && key != "paper" && key != "seeds") settings.emplace_back(key, value_text(*node));
      std::vector<std::pair<toml::key, toml::node*>> entries;
      for (auto&& [k, v] : row)
        if (k.str() != "paper" && k.str() != "seeds") entries.emplace_back(k, &v);
      for (auto& [k, v] : entries) put_dotted(out, split_dotted(std::string(k.str())), k.source(), std::move(*v));
    } else if (plan.kind == RowPlan::Kind::grid) {
      const std::string grid = plan.source.substr(6);
      toml::array& axes = *suite_doc["grids"][grid]["axes"].as_array();
      for (std::size_t a = 0; a < axes.size(); ++a) {
        toml::table& axis = *axes.get(a)->as_table();
        std::vector<std::pair<std::string, const toml::node*>> leaves;
        flatten(axis, "", leaves);
        for (const auto& [key, leaf] : leaves) {
          toml::node& value = *const_cast<toml::node*>(leaf)->as_array()->get(plan.indices[a]);
          settings.emplace_back(key, value_text(value));
          put_dotted(out, split_dotted(key), leaf->source(), std::move(value));
        }
      }
    }
    return out;
  }

  SuiteRow resolve(const Suite& suite, const RowPlan& plan, std::uint64_t seed, UnsupportedRows unsupported) {
    SuiteRow row;
    row.unsupported = unsupported;
    row.name = plan.name;
    row.seed = seed;
    row.paper = plan.paper;
    row.position = plan.position;
    toml::table suite_doc = fresh_suite();
    toml::table doc = fresh_base();
    if (auto* b = suite_doc.get_as<toml::table>("base")) merge(doc, std::move(*b));
    // --set: the base of every row; parsed anew for each row, as the files are (a copied toml::table
    // loses its nodes' positions, which errors name)
    merge(doc, command_line_settings(settings_));
    merge(doc, overrides(suite_doc, plan, row.settings));
    bool has_cache_dir = false;
    if (auto* d = doc.get_as<toml::table>("data")) has_cache_dir = d->contains("cache_dir");
    try {
      if (!doc.contains("data") && base_path_.empty())
        throw Error(fmt::format("{}: the suite has no base experiment: give suite.base = \"FILE.toml\" or a "
                                "[base.data] table",
                                path_));
      row.config = parse_experiment_table(std::move(doc), path_);
    } catch (const Error& e) {
      const std::string message = name_environment(vars_.from_environment(), e.what());
      if (plan.kind == RowPlan::Kind::base) throw Error(message);
      throw Error(label_error(message, plan.kind == RowPlan::Kind::grid ? plan.source + " (" + plan.name + ")"
                                                                         : plan.source,
                              plan.position));
    }
    row.config.seed = seed;
    if (search_) apply_search_steps(*search_, row);
    row.config.name = fmt::format("{}-{}", suite.name, row.name);
    if (!has_cache_dir) row.config.data.cache_dir = (fs::path(suite.run_dir) / ".cache").string();
    row.hash = hash_row(row.config, seed);  // the run folder follows from it (mark_identical_rows)
    return row;
  }

  std::string path_, text_;
  std::vector<std::string> settings_;  // the command line's --set KEY=VALUE
  fs::path dir_;
  std::string base_file_, base_path_, base_text_;
  fs::path base_rel_;
  Variables vars_;
  std::optional<SearchTable> search_;
};

}  // namespace

std::string name_environment(const std::map<std::string, std::string>& environment, const std::string& message) {
  std::string out = message;
  for (const auto& [name, value] : environment)
    if (!value.empty() && message.find("'" + value + "'") != std::string::npos)
      out += fmt::format(" (the value '{}' came from the environment variable {})", value, name);
  return out;
}

Suite load_suite(const std::string& path, const std::vector<std::string>& settings) {
  Suite suite = SuiteReader(path, settings).read();
  suite.settings = settings;
  return suite;
}

std::string row_key(const SuiteRow& row) { return row.name + "@" + std::to_string(row.seed); }

std::string row_dir(const Suite& suite, const SuiteRow& row) {
  return (fs::path(suite.run_dir) / fmt::format("{}-s{}-{}", row.name, row.seed, row.hash)).string();
}

}  // namespace attnlab::nmt
