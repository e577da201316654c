// [model.attention]'s score expressions: score_mod and mask_mod (for every site), the site tables
// [model.attention.encoder], .decoder and .cross that override them, and the tensors
// [model.attention.tensors.NAME]. Each expression remembers where its text starts in its file, so
// that a mistake inside the string is reported at its own line and column; every site is built
// (checked) once the model's heads and max_length are known.
#include "experiment_expressions.h"

#include <fstream>
#include <functional>
#include <sstream>

#include "attnlab/config/plugin_options.h"
#include "attnlab/error.h"

namespace attnlab::nmt {
namespace {

using config::TableReader;

// The line `line` (1-based) of `path`, or "" when it cannot be read.
std::string line_of(const std::string& path, int line) {
  std::ifstream in(path);
  std::string text;
  for (int k = 1; k <= line && std::getline(in, text); ++k) {
  }
  return in || !text.empty() ? text : std::string();
}

// Where a string value's text starts: after its quote ("...", '...') or triple quote, on the next
// line when a triple-quoted string starts with a newline (TOML drops it).
expr::SourceSpot spot_of(const toml::node& node, const std::string& key) {
  const toml::source_region& r = node.source();
  expr::SourceSpot s;
  s.key = key;
  if (!r.begin || !r.path) return s;
  s.file = std::string(*r.path);
  s.line = static_cast<int>(r.begin.line);
  s.column = static_cast<int>(r.begin.column);
  const std::string text = line_of(s.file, s.line);
  const std::size_t at = static_cast<std::size_t>(s.column - 1);
  const bool triple =
      at < text.size() && (text.compare(at, 3, "\"\"\"") == 0 || text.compare(at, 3, "'''") == 0);
  s.column += triple ? 3 : 1;
  if (triple && text.find_first_not_of(" \t\r", at + 3) == std::string::npos) {
    ++s.line;
    s.column = 1;
  }
  return s;
}

// The expression at `key` of `t`, or `fallback` when the table lacks it.
expr::ExprText read_text(TableReader& t, const std::string& key, const expr::ExprText& fallback) {
  if (!t.has(key)) return fallback;
  expr::ExprText e;
  e.text = t.get_string(key, "");
  e.spot = spot_of(*t.raw().get(key), t.path(key));
  return e;
}

expr::TensorSpec read_tensor(TableReader& t, const std::string& name, std::int64_t heads) {
  expr::TensorSpec s;
  s.name = name;
  s.spot.key = "model.attention.tensors." + name;
  if (const toml::source_region& r = t.raw().source(); r.begin && r.path) {
    s.spot.file = std::string(*r.path);
    s.spot.line = static_cast<int>(r.begin.line);
    s.spot.column = static_cast<int>(r.begin.column);
  }
  const toml::array* shape = t.raw()["shape"].as_array();
  if (!shape)
    throw Error(fmt::format("{}: {}: a tensor needs shape = [...] (integers, or \"heads\" for the number of heads)",
                            t.position(), s.spot.key));
  t.accept("shape");
  for (const toml::node& d : *shape) {
    if (auto n = d.value_exact<std::int64_t>()) {
      s.shape.push_back(*n);
      s.per_head.push_back(false);
    } else if (auto word = d.value_exact<std::string>(); word && *word == "heads") {
      s.shape.push_back(heads);
      s.per_head.push_back(true);
    } else {
      throw Error(fmt::format("{}: {}.shape: each size is an integer or \"heads\", got {}",
                              config::source_position(d.source()), s.spot.key, d.is_string() ? "another string" : "a value of another type"));
    }
  }
  const bool has_values = t.has("values");
  const std::string init = t.get_string("init", has_values ? "values" : "zeros");
  const std::optional<expr::TensorInit> kind = expr::kTensorInits.find(init);
  if (!kind)
    throw Error(fmt::format("{}: {}.init: {}", t.position("init"), s.spot.key, expr::kTensorInits.unknown(init)));
  s.init = *kind;
  if (has_values != (s.init == expr::TensorInit::values))
    throw Error(fmt::format("{}: {}: init = \"values\" goes with values = [...], and values with it",
                            t.position(has_values ? "values" : "init"), s.spot.key));
  if (has_values) {
    const toml::array* values = t.raw()["values"].as_array();
    if (!values) throw Error(fmt::format("{}: {}.values: expected an array of numbers", t.position("values"), s.spot.key));
    t.accept("values");
    // Nested arrays are read row-major.
    std::function<void(const toml::array&)> flatten = [&](const toml::array& a) {
      for (const toml::node& v : a) {
        if (auto inner = v.as_array()) flatten(*inner);
        else if (auto x = v.value<double>()) s.values.push_back(*x);
        else
          throw Error(fmt::format("{}: {}.values: expected numbers", config::source_position(v.source()), s.spot.key));
      }
    };
    flatten(*values);
  }
  s.std = t.get_real("std", s.std);
  s.learned = t.get_bool("learned", s.learned);
  t.finish();
  return s;
}

void read_site(TableReader& t, const std::string& site, expr::SiteExprs& exprs) {
  auto s = t.table(site);
  if (!s) return;
  exprs.score_mod = read_text(*s, "score_mod", exprs.score_mod);
  exprs.mask_mod = read_text(*s, "mask_mod", exprs.mask_mod);
  s->finish();
}

}  // namespace

const std::vector<std::string>& expression_keys() {
  static const std::vector<std::string> keys = {"score_mod", "mask_mod", "tensors", "encoder", "decoder", "cross"};
  return keys;
}

void read_attention_expressions(TableReader& model, TransformerConfig& m) {
  auto t = model.table("attention");
  if (!t) return;
  AttentionExpressions& e = m.expressions;
  expr::SiteExprs all;
  all.score_mod = read_text(*t, "score_mod", {});
  all.mask_mod = read_text(*t, "mask_mod", {});
  e.encoder = e.decoder = e.cross = all;
  read_site(*t, "encoder", e.encoder);
  read_site(*t, "decoder", e.decoder);
  read_site(*t, "cross", e.cross);
  if (auto tensors = t->table("tensors")) {
    for (const auto& [key, node] : tensors->raw()) {
      const std::string name(key.str());
      auto table = tensors->table(name);
      e.tensors.push_back(read_tensor(*table, name, m.dims.n_heads));
    }
  }
  if (!e.any()) {
    if (!e.tensors.empty())
      throw Error(fmt::format("{}: model.attention.tensors: tensors are declared but no score_mod or mask_mod reads "
                              "them",
                              t->position("tensors")));
    return;
  }
  std::vector<bool> read(e.tensors.size(), false);
  for (AttentionSite site : kAttentionSites) {
    const auto built = site_expressions(m, site);
    if (!built) continue;
    for (const auto& used : built->tensors())
      for (std::size_t k = 0; k < e.tensors.size(); ++k) read[k] = read[k] || e.tensors[k].name == used.name;
  }
  for (std::size_t k = 0; k < e.tensors.size(); ++k)
    if (!read[k])
      throw Error(fmt::format("{}:{}:{}: {}: tensor '{}' is declared but no score_mod or mask_mod reads it",
                              e.tensors[k].spot.file, e.tensors[k].spot.line, e.tensors[k].spot.column,
                              e.tensors[k].spot.key, e.tensors[k].name));
}

}  // namespace attnlab::nmt
