// apply_score_expr: score expressions on dense scores, forward and backward side by side. Each
// (batch, head) pair is one task; a task runs the program over each of its query rows
// (expr/interpret.h). The backward gives each task its own f64 share of the learned tensors'
// gradients and adds the shares in task order, so the sums do not depend on the thread count.
#include "attnlab/ops/score_expr.h"

#include <atomic>
#include <limits>
#include <mutex>
#include <string>

#include "attnlab/autograd.h"
#include "attnlab/threads.h"
#include "expr/interpret.h"
#include "ops/op_util.h"

namespace attnlab {
namespace {

using expr::Program;
using expr::RowEvaluator;
using expr::RowInputs;

struct Geometry {
  std::int64_t batch, heads, tq, tk;
};

Geometry geometry(const Tensor& scores) { return {scores.dim(0), scores.dim(1), scores.dim(2), scores.dim(3)}; }

// The first Error of a parallel loop, rethrown after it (parallel_for's functions must not throw).
class FirstError {
 public:
  template <typename F>
  void guard(F&& f) {
    try {
      f();
    } catch (const std::exception& e) {
      std::lock_guard lock(mutex_);
      if (message_.empty()) message_ = e.what();
    }
  }
  void rethrow() const {
    if (!message_.empty()) throw Error(message_);
  }

 private:
  std::mutex mutex_;
  std::string message_;
};

template <typename T>
struct Call {
  const expr::ScoreExprCall& call;
  const Program& p;
  std::vector<std::int64_t> q_len, kv_len;
  std::vector<Tensor> host;  // the tensors in T on the CPU
  std::vector<const T*> data;

  Call(const expr::ScoreExprCall& c, const Geometry& g)
      : call(c), p(c.expr->program()), q_len(expr::query_lengths(c, g.batch, g.tq)),
        kv_len(expr::key_lengths(c, g.batch, g.tk)) {
    for (const Tensor& t : c.tensors) host.push_back(t.detach().to(Device::cpu()).to(dtype_of_v<T>));
    for (const Tensor& t : host) data.push_back(t.data<T>());
  }
  RowInputs<T> row(std::int64_t bh, std::int64_t i, const Geometry& g, const T* score) const {
    const std::int64_t b = bh / g.heads;
    return {score, b, bh % g.heads, call.q_offset + i, 0, q_len[static_cast<std::size_t>(b)],
            kv_len[static_cast<std::size_t>(b)], data.data()};
  }
};

template <typename T>
void forward_rows(const Tensor& scores, const expr::ScoreExprCall& call, Tensor& out) {
  const Geometry g = geometry(scores);
  const Call<T> c(call, g);
  const T* s = scores.data<T>();
  T* o = out.data<T>();
  FirstError error;
  parallel_for(g.batch * g.heads, 1, [&](std::int64_t begin, std::int64_t end) {
    error.guard([&] {
      RowEvaluator<T> ev(c.p, {c.p.score, c.p.mask}, c.call.expr->tensors());
      for (std::int64_t bh = begin; bh < end; ++bh)
        for (std::int64_t i = 0; i < g.tq; ++i) {
          const std::int64_t row = (bh * g.tq + i) * g.tk;
          ev.run(c.row(bh, i, g, s + row), g.tk);
          const T* mod = c.p.score >= 0 ? ev.real(c.p.score) : s + row;
          const std::int64_t* keep = c.p.mask >= 0 ? ev.integer(c.p.mask) : nullptr;
          for (std::int64_t j = 0; j < g.tk; ++j)
            o[row + j] = !keep || keep[j] ? mod[j] : -std::numeric_limits<T>::infinity();
        }
    });
  });
  error.rethrow();
}

// d scores and the learned tensors' gradients (grads[k] undefined for a tensor not learned).
template <typename T>
void backward_rows(const Tensor& scores, const expr::ScoreExprCall& call, const Tensor& dout, Tensor& dscores,
              std::vector<Tensor>& grads) {
  const Geometry g = geometry(scores);
  const Call<T> c(call, g);
  const Program& p = c.p;
  // Each learned tensor's place in a task's share.
  std::vector<std::int64_t> base(call.tensors.size(), -1);
  std::int64_t share = 0;
  for (std::size_t k = 0; k < call.tensors.size(); ++k)
    if (grads[k].defined()) base[k] = share, share += call.tensors[k].numel();
  const std::int64_t tasks = g.batch * g.heads;
  std::vector<double> shares(static_cast<std::size_t>(tasks * share), 0.0);
  std::vector<int> roots = {p.d_score, p.mask};
  for (const auto& l : p.d_loads) roots.push_back(l.grad), roots.push_back(l.load);
  const T* s = scores.data<T>();
  const T* go = dout.data<T>();
  T* ds = dscores.data<T>();
  FirstError error;
  parallel_for(tasks, 1, [&](std::int64_t begin, std::int64_t end) {
    error.guard([&] {
      RowEvaluator<T> ev(p, roots, call.expr->tensors());
      for (std::int64_t bh = begin; bh < end; ++bh) {
        double* mine = shares.data() + bh * share;
        for (std::int64_t i = 0; i < g.tq; ++i) {
          const std::int64_t row = (bh * g.tq + i) * g.tk;
          ev.run(c.row(bh, i, g, s + row), g.tk);
          const T* d = p.d_score >= 0 ? ev.real(p.d_score) : nullptr;
          const std::int64_t* keep = p.mask >= 0 ? ev.integer(p.mask) : nullptr;
          for (std::int64_t j = 0; j < g.tk; ++j) {
            const T gj = go[row + j];
            const bool kept = !keep || keep[j];
            ds[row + j] = kept && gj != T(0) ? (d ? gj * d[j] : gj) : T(0);
          }
          for (const auto& l : p.d_loads) {
            const int t = p.nodes[static_cast<std::size_t>(l.load)].tensor;
            if (base[static_cast<std::size_t>(t)] < 0) continue;
            const T* dl = ev.real(l.grad);
            double* target = mine + base[static_cast<std::size_t>(t)];
            for (std::int64_t j = 0; j < g.tk; ++j) {
              const T gj = go[row + j];
              if ((keep && !keep[j]) || gj == T(0)) continue;
              target[ev.offset(l.load, j)] += static_cast<double>(gj * dl[j]);
            }
          }
        }
      }
    });
  });
  error.rethrow();
  for (std::size_t k = 0; k < call.tensors.size(); ++k) {
    if (base[k] < 0) continue;
    const std::int64_t n = call.tensors[k].numel();
    std::vector<double> sum(static_cast<std::size_t>(n), 0.0);
    for (std::int64_t t = 0; t < tasks; ++t)
      for (std::int64_t e = 0; e < n; ++e) sum[static_cast<std::size_t>(e)] += shares[static_cast<std::size_t>(t * share + base[k] + e)];
    grads[k] = Tensor::from_vector<double>(call.tensors[k].shape(), sum)
                   .to(call.tensors[k].dtype())
                   .to(call.tensors[k].device());
  }
}

template <typename Fn>
void for_float(DType dtype, Fn&& fn) {
  if (dtype == DType::f64) fn(double{});
  else fn(float{});
}

class ScoreExprNode final : public Node {
 public:
  ScoreExprNode(const Tensor& scores, const expr::ScoreExprCall& call) : scores_(scores.detach()), call_(call) {
    for (Tensor& t : call_.tensors) learned_.push_back(t.requires_grad()), t = t.detach();
  }
  std::vector<Tensor> backward(std::vector<Tensor>& grads) override {
    const Tensor g = detail::grad_or_zeros(grads, 0, output_shapes[0], output_dtypes[0], device);
    Tensor ds = Tensor::empty_like(scores_);
    std::vector<Tensor> dt(call_.tensors.size());
    for (std::size_t k = 0; k < dt.size(); ++k)
      if (learned_[k]) dt[k] = Tensor::zeros(Shape{1}, DType::f32);  // marks it learned; replaced
    for_float(scores_.dtype(), [&](auto tag) { backward_rows<decltype(tag)>(scores_, call_, g, ds, dt); });
    std::vector<Tensor> out = {ds};
    out.insert(out.end(), dt.begin(), dt.end());
    return out;
  }
  void release() override {
    scores_ = Tensor();
    call_ = {};
  }
  std::string_view name() const override { return "apply_score_expr"; }

 private:
  Tensor scores_;
  expr::ScoreExprCall call_;
  std::vector<bool> learned_;
};

}  // namespace

Tensor apply_score_expr(const Tensor& scores, const expr::ScoreExprCall& call) {
  ATTNLAB_CHECK(scores.defined() && scores.rank() == 4, "apply_score_expr: scores must be [B, H, Tq, Tk], got {}",
                scores.defined() ? scores.shape().str() : std::string("undefined"));
  ATTNLAB_CHECK(scores.device().is_cpu(),
                "apply_score_expr: the dense score expressions run on the CPU; on {} use an attention plugin whose "
                "kernels apply them (flash)",
                scores.device().str());
  ATTNLAB_CHECK(scores.dtype() == DType::f32 || scores.dtype() == DType::f64,
                "apply_score_expr: scores must be f32 or f64, got {}", dtype_name(scores.dtype()));
  const Geometry g = geometry(scores);
  expr::check_call("apply_score_expr", call, g.batch, g.heads, g.tq, g.tk);
  for (const Tensor& t : call.tensors)
    ATTNLAB_CHECK(t.device() == scores.device(), "apply_score_expr: tensor on {} but the scores on {}",
                  t.device().str(), scores.device().str());
  const Tensor& s = scores;
  Tensor out = Tensor::empty_like(s);
  for_float(s.dtype(), [&](auto tag) { forward_rows<decltype(tag)>(s, call, out); });
  std::vector<const Tensor*> inputs = {&scores};
  for (const Tensor& t : call.tensors) inputs.push_back(&t);
  std::vector<Tensor> probe(call.tensors);
  probe.push_back(scores);
  if (any_requires_grad(probe)) record(std::make_shared<ScoreExprNode>(s, call), inputs, {&out});
  return out;
}

}  // namespace attnlab
