#pragma once
// The program evaluated one row of scores at a time (one query against a run of keys), node by
// node over the whole row: the dense reference op's way of applying expressions
// (ops/score_expr.cpp), independent of the code the kernels compile. Reals are computed in T
// (float or double, as the kernels compute), integers exactly, booleans as 0 / 1.
#include <cstdint>
#include <vector>

#include "expr/ir.h"

namespace attnlab::expr {

template <typename T>
struct RowInputs {
  const T* score = nullptr;  // [n] (unused by programs without `score`)
  std::int64_t b = 0, h = 0, q_idx = 0, kv_idx0 = 0;  // the row's keys are kv_idx0 .. kv_idx0 + n - 1
  std::int64_t q_len = 0, kv_len = 0;
  const T* const* tensors = nullptr;  // each declared tensor's data, row-major
};

template <typename T>
class RowEvaluator {
 public:
  // Evaluates what `roots` need.
  RowEvaluator(const Program& program, const std::vector<int>& roots, const std::vector<TensorSpec>& tensors);
  void run(const RowInputs<T>& in, std::int64_t n);
  // A node's values over the row (real nodes: reals; integer and boolean nodes: integers).
  const T* real(int node) const { return real_[static_cast<std::size_t>(node)].data(); }
  const std::int64_t* integer(int node) const { return int_[static_cast<std::size_t>(node)].data(); }
  // The flat row-major offset of load node `node`'s element for key k of the last row.
  std::int64_t offset(int node, std::int64_t k) const { return offsets_[static_cast<std::size_t>(node)][static_cast<std::size_t>(k)]; }

 private:
  const Program& p_;
  const std::vector<TensorSpec>& tensors_;
  std::vector<bool> live_;
  std::vector<std::vector<T>> real_;
  std::vector<std::vector<std::int64_t>> int_;
  std::vector<std::vector<std::int64_t>> offsets_;
};

extern template class RowEvaluator<float>;
extern template class RowEvaluator<double>;

}  // namespace attnlab::expr
