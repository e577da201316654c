#include "plugins/cudnn_graph_interpreter.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "attnlab/error.h"

namespace attnlab::cudnn_attention::testing {

std::int64_t extent(const GraphTensor& t) {
  std::int64_t last = 0;
  for (int a = 0; a < 4; ++a) last += (t.dims[a] - 1) * t.strides[a];
  return last + 1;
}

std::int64_t offset(const GraphTensor& t, const Dims& i) {
  return i[0] * t.strides[0] + i[1] * t.strides[1] + i[2] * t.strides[2] + i[3] * t.strides[3];
}

namespace {

struct Slot {
  const GraphTensor* tensor = nullptr;
  std::vector<double> data;
  bool ready = false;
};

class Interpreter {
 public:
  Interpreter(const SdpaGraph& graph, Buffers& buffers) : buffers_(buffers) {
    for (const auto& t : graph.tensors) {
      Slot& s = slots_[t.uid];
      s.tensor = &t;
      auto it = buffers.find(t.uid);
      if (!t.is_virtual && it != buffers.end()) {
        s.data = it->second;
        s.ready = true;
        ATTNLAB_CHECK(static_cast<std::int64_t>(s.data.size()) >= (t.by_value ? 1 : extent(t)),
                      "interpreter: buffer of {} is too small", t.name);
      } else {
        s.data.assign(static_cast<std::size_t>(t.by_value ? 1 : extent(t)), 0.0);
      }
    }
  }

  void run(const GraphOp& op) {
    switch (op.kind) {
      case OpKind::matmul: matmul(op); break;
      case OpKind::pointwise: pointwise(op); break;
      case OpKind::reduction: reduction(op); break;
      case OpKind::reshape: reshape(op); break;
    }
    slot(op.y).ready = true;
  }

  void finish() {
    for (auto& [id, s] : slots_)
      if (!s.tensor->is_virtual && s.ready) buffers_[id] = s.data;
  }

 private:
  Slot& slot(std::int64_t id) {
    auto it = slots_.find(id);
    ATTNLAB_CHECK(it != slots_.end(), "interpreter: no tensor {}", id);
    return it->second;
  }
  Slot& input(std::int64_t id) {
    Slot& s = slot(id);
    ATTNLAB_CHECK(s.ready, "interpreter: {} is read before it is written", s.tensor->name);
    return s;
  }
  // Element `i` of an output-shaped index space read from s (extent-1 axes broadcast).
  static double at(const Slot& s, const Dims& i) {
    if (s.tensor->by_value) return s.data[0];
    Dims j{};
    for (int a = 0; a < 4; ++a) j[a] = s.tensor->dims[a] == 1 ? 0 : i[a];
    return s.data[static_cast<std::size_t>(offset(*s.tensor, j))];
  }
  static void put(Slot& s, const Dims& i, double v) { s.data[static_cast<std::size_t>(offset(*s.tensor, i))] = v; }

  template <typename Fn>
  static void each(const Dims& dims, Fn&& fn) {
    Dims i{};
    for (i[0] = 0; i[0] < dims[0]; ++i[0])
      for (i[1] = 0; i[1] < dims[1]; ++i[1])
        for (i[2] = 0; i[2] < dims[2]; ++i[2])
          for (i[3] = 0; i[3] < dims[3]; ++i[3]) fn(i);
  }

  // The override of batch row b, or `full` without one.
  std::int64_t limit(std::int64_t id, std::int64_t b, std::int64_t full) {
    if (id < 0) return full;
    return std::min(full, static_cast<std::int64_t>(at(input(id), {b, 0, 0, 0})));
  }

  void matmul(const GraphOp& op) {
    Slot &a = input(op.x), &b = input(op.b), &c = slot(op.y);
    const Dims& cd = c.tensor->dims;
    const std::int64_t k_full = a.tensor->dims[3];
    ATTNLAB_CHECK(b.tensor->dims[2] == k_full && a.tensor->dims[2] == cd[2] && b.tensor->dims[3] == cd[3],
                  "interpreter: {} has operands that do not fit", op.name);
    each(cd, [&](const Dims& i) {
      const std::int64_t m = limit(op.m_override, i[0], cd[2]), n = limit(op.n_override, i[0], cd[3]),
                         kk = limit(op.k_override, i[0], k_full);
      double sum = 0;
      if (i[2] < m && i[3] < n)
        for (std::int64_t k = 0; k < kk; ++k) sum += at(a, {i[0], i[1], i[2], k}) * at(b, {i[0], i[1], k, i[3]});
      put(c, i, sum);
    });
  }

  void pointwise(const GraphOp& op) {
    Slot& y = slot(op.y);
    Slot& x = input(op.x);
    Slot* b = op.b >= 0 ? &input(op.b) : nullptr;
    Slot* t = op.t >= 0 ? &input(op.t) : nullptr;
    each(y.tensor->dims, [&](const Dims& i) {
      const double xv = at(x, i), bv = b ? at(*b, i) : 0.0;
      double v = 0;
      switch (op.pointwise) {
        case PointwiseMode::add: v = xv + bv; break;
        case PointwiseMode::sub: v = xv - bv; break;
        case PointwiseMode::mul: v = xv * bv; break;
        case PointwiseMode::div: v = xv / bv; break;
        case PointwiseMode::exp: v = std::exp(xv); break;
        case PointwiseMode::log: v = std::log(xv); break;
        case PointwiseMode::identity: v = xv; break;
        case PointwiseMode::gen_index: v = static_cast<double>(i[static_cast<std::size_t>(op.axis)]); break;
        case PointwiseMode::cmp_ge: v = xv >= bv ? 1 : 0; break;
        case PointwiseMode::cmp_lt: v = xv < bv ? 1 : 0; break;
        case PointwiseMode::logical_and: v = (xv != 0 && bv != 0) ? 1 : 0; break;
        case PointwiseMode::binary_select:
          ATTNLAB_CHECK(t != nullptr, "interpreter: {} has no condition", op.name);
          v = at(*t, i) != 0 ? xv : bv;
          break;
      }
      put(y, i, v);
    });
  }

  void reduction(const GraphOp& op) {
    Slot &x = input(op.x), &y = slot(op.y);
    const double init = op.reduction == ReductionMode::max ? -std::numeric_limits<double>::infinity() : 0.0;
    each(y.tensor->dims, [&](const Dims& i) { put(y, i, init); });
    each(x.tensor->dims, [&](const Dims& i) {
      Dims j{};
      for (int a = 0; a < 4; ++a) j[a] = y.tensor->dims[a] == 1 ? 0 : i[a];
      const double v = at(x, i);
      double& acc = y.data[static_cast<std::size_t>(offset(*y.tensor, j))];
      acc = op.reduction == ReductionMode::max ? std::max(acc, v) : acc + v;
    });
  }

  // A view: the same memory under y's dims and strides.
  void reshape(const GraphOp& op) {
    Slot &x = input(op.x), &y = slot(op.y);
    ATTNLAB_CHECK(extent(*x.tensor) == extent(*y.tensor), "interpreter: {} changes the extent", op.name);
    y.data = x.data;
  }

  Buffers& buffers_;
  std::map<std::int64_t, Slot> slots_;
};

}  // namespace

void run_graph(const SdpaGraph& graph, Buffers& buffers) {
  Interpreter in(graph, buffers);
  for (const auto& op : graph.ops) in.run(op);
  in.finish();
}

}  // namespace attnlab::cudnn_attention::testing
