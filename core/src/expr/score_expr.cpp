// ScoreExpr: a site's expressions built into one program (parsed, checked, lowered, differentiated),
// the checks of the tensors they read, and the tensors' initial values.
#include "attnlab/expr/score_expr.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "attnlab/init.h"
#include "attnlab/suggest.h"
#include "expr/ir.h"
#include "expr/lower.h"

namespace attnlab::expr {
namespace {

std::string where(const SourceSpot& spot) {
  if (spot.line <= 0) return spot.key.empty() ? std::string() : spot.key + ": ";
  return fmt::format("{}:{}:{}: {}: ", spot.file, spot.line, spot.column, spot.key);
}

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

void check_tensor(const TensorSpec& t, const Limits& limits) {
  const std::string at = where(t.spot);
  if (!is_identifier(t.name))
    throw ExprError(fmt::format("{}tensor name '{}' is not a name (letters, digits and _, not starting with a digit)",
                                at, t.name));
  std::vector<std::string> taken = variable_names(true);
  for (const auto& f : function_names()) taken.push_back(f);
  taken.insert(taken.end(), {"inf", "true", "false"});
  if (std::find(taken.begin(), taken.end(), t.name) != taken.end())
    throw ExprError(fmt::format("{}tensor name '{}' is taken by a variable or function of the expressions", at, t.name));
  if (t.shape.empty()) throw ExprError(fmt::format("{}tensor '{}' has no shape; give shape = [...]", at, t.name));
  for (std::int64_t d : t.shape)
    if (d <= 0 || d > (std::int64_t{1} << 24))
      throw ExprError(fmt::format("{}tensor '{}': shape {} has a size outside [1, 2^24]", at, t.name, t.shape_text()));
  if (t.numel() > (std::int64_t{1} << 26))
    throw ExprError(fmt::format("{}tensor '{}': shape {} holds {} elements, more than 2^26", at, t.name,
                                t.shape_text(), t.numel()));
  switch (t.init) {
    case TensorInit::values:
      if (static_cast<std::int64_t>(t.values.size()) != t.numel())
        throw ExprError(fmt::format("{}tensor '{}': {} values for shape {}, which holds {}", at, t.name, t.values.size(),
                                    t.shape_text(), t.numel()));
      for (double v : t.values)
        if (!std::isfinite(v)) throw ExprError(fmt::format("{}tensor '{}': value {} is not finite", at, t.name, v));
      break;
    case TensorInit::alibi_slopes:
      if (t.shape.size() != 1 || t.shape[0] != limits.heads)
        throw ExprError(fmt::format("{}tensor '{}': init \"alibi_slopes\" needs shape [\"heads\"] (one slope per head, "
                                    "{} here), got {}",
                                    at, t.name, limits.heads, t.shape_text()));
      break;
    case TensorInit::normal:
      if (!(t.std > 0.0 && std::isfinite(t.std)))
        throw ExprError(fmt::format("{}tensor '{}': std must be positive, got {}", at, t.name, t.std));
      break;
    case TensorInit::zeros: break;
  }
}

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

std::int64_t TensorSpec::numel() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

std::string TensorSpec::shape_text() const {
  std::vector<std::string> dims;
  for (std::size_t d = 0; d < shape.size(); ++d)
    dims.push_back(d < per_head.size() && per_head[d] ? fmt::format("heads = {}", shape[d]) : fmt::format("{}", shape[d]));
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

ScoreExpr::~ScoreExpr() = default;

std::shared_ptr<const ScoreExpr> ScoreExpr::build(const SiteExprs& site, const std::vector<TensorSpec>& tensors,
                                                  const Limits& limits) {
  if (limits.heads <= 0 || limits.max_length <= 0)
    throw ExprError(fmt::format("score expressions: heads ({}) and max_length ({}) must be positive", limits.heads,
                                limits.max_length));
  for (std::size_t k = 0; k < tensors.size(); ++k) {
    check_tensor(tensors[k], limits);
    for (std::size_t j = 0; j < k; ++j)
      if (tensors[j].name == tensors[k].name)
        throw ExprError(fmt::format("{}tensor '{}' is declared twice", where(tensors[k].spot), tensors[k].name));
  }
  std::shared_ptr<ScoreExpr> e(new ScoreExpr());
  e->source_ = site;
  e->limits_ = limits;
  Program p;
  if (!site.score_mod.empty()) p.score = lower_score_mod(p, site.score_mod, tensors, limits);
  if (!site.mask_mod.empty()) p.mask = lower_mask_mod(p, site.mask_mod, tensors, limits);
  // Keep the tensors the expressions read, renumbered in declaration order.
  std::vector<int> renumber(tensors.size(), -1);
  for (const Node& n : p.nodes)
    if (n.op == Op::load) renumber[static_cast<std::size_t>(n.tensor)] = 0;
  for (std::size_t k = 0; k < tensors.size(); ++k)
    if (renumber[k] == 0) {
      renumber[k] = static_cast<int>(e->tensors_.size());
      e->tensors_.push_back(tensors[k]);
    }
  for (Node& n : p.nodes)
    if (n.op == Op::load) n.tensor = renumber[static_cast<std::size_t>(n.tensor)];
  std::vector<bool> learned;
  for (const auto& t : e->tensors_) learned.push_back(t.learned);
  differentiate(p, learned);
  e->program_ = std::make_unique<Program>(std::move(p));
  e->canonical_ = e->program_->text();
  for (const auto& t : e->tensors_) e->canonical_ += fmt::format("tensor {} {}\n", t.name, t.shape_text());
  e->hash_ = fnv1a(e->canonical_);
  return e;
}

bool ScoreExpr::has_score_mod() const { return program_->score >= 0; }
bool ScoreExpr::has_mask_mod() const { return program_->mask >= 0; }
bool ScoreExpr::learns() const { return !program_->d_loads.empty(); }

std::vector<double> alibi_slopes(std::int64_t heads) {
  auto power_of_two = [](std::int64_t n) {
    std::vector<double> s;
    for (std::int64_t k = 1; k <= n; ++k) s.push_back(std::pow(2.0, -8.0 * static_cast<double>(k) / static_cast<double>(n)));
    return s;
  };
  std::int64_t p = 1;
  while (p * 2 <= heads) p *= 2;
  std::vector<double> s = power_of_two(p);
  const std::vector<double> finer = power_of_two(2 * p);
  for (std::size_t k = 0; static_cast<std::int64_t>(s.size()) < heads; k += 2) s.push_back(finer[k]);
  return s;
}

Tensor initial_tensor(const TensorSpec& spec, Generator& init, DType dtype, Device device) {
  const Shape shape(spec.shape);
  switch (spec.init) {
    case TensorInit::zeros: return Tensor::zeros(shape, dtype, device);
    case TensorInit::values: return Tensor::from_vector<double>(shape, spec.values).to(dtype).to(device);
    case TensorInit::alibi_slopes: return Tensor::from_vector<double>(shape, alibi_slopes(spec.shape[0])).to(dtype).to(device);
    case TensorInit::normal: return normal(shape, 0.0, spec.std, init, dtype, device);
  }
  return {};
}

}  // namespace attnlab::expr
