#include "attnlab/expr/score_call.h"

#include "attnlab/error.h"

namespace attnlab::expr {
namespace {

std::vector<std::int64_t> host_lengths(const Tensor& t) {
  return t.to(Device::cpu()).to(DType::i64).to_vector<std::int64_t>();
}

}  // namespace

void check_call(const char* who, const ScoreExprCall& call, std::int64_t batch, std::int64_t heads, std::int64_t tq,
                std::int64_t tk) {
  ATTNLAB_CHECK(call.expr != nullptr, "{}: a score expression call without expressions", who);
  const ScoreExpr& e = *call.expr;
  const Limits& lim = e.limits();
  ATTNLAB_CHECK(heads == lim.heads, "{}: the score expressions were checked for {} heads, called with {}", who,
                lim.heads, heads);
  ATTNLAB_CHECK(call.q_offset >= 0 && call.q_offset + tq <= lim.max_length && tk <= lim.max_length,
                "{}: positions up to {} (queries) and {} (keys) pass model.max_length = {}, the bound the score "
                "expressions' indices were proven within",
                who, call.q_offset + tq - 1, tk - 1, lim.max_length);
  ATTNLAB_CHECK(call.tensors.size() == e.tensors().size(), "{}: the score expressions read {} tensors, given {}", who,
                e.tensors().size(), call.tensors.size());
  for (std::size_t k = 0; k < call.tensors.size(); ++k) {
    const Tensor& t = call.tensors[k];
    const TensorSpec& s = e.tensors()[k];
    ATTNLAB_CHECK(t.defined() && t.shape() == Shape(s.shape), "{}: tensor '{}' should be {}, got {}", who, s.name,
                  s.shape_text(), t.defined() ? t.shape().str() : std::string("undefined"));
  }
  for (const Tensor* lengths : {&call.q_lengths, &call.kv_lengths}) {
    if (!lengths->defined()) continue;
    ATTNLAB_CHECK((lengths->dtype() == DType::i32 || lengths->dtype() == DType::i64) &&
                      lengths->shape() == Shape({batch}),
                  "{}: the {} lengths must be i32 or i64 [{}], got {}", who, lengths == &call.q_lengths ? "query" : "key",
                  batch, lengths->str());
    for (std::int64_t n : host_lengths(*lengths))
      ATTNLAB_CHECK(n >= 0 && n <= lim.max_length, "{}: a {} length of {} is outside [0, model.max_length = {}]", who,
                    lengths == &call.q_lengths ? "query" : "key", n, lim.max_length);
  }
}

std::vector<std::int64_t> query_lengths(const ScoreExprCall& call, std::int64_t batch, std::int64_t tq) {
  if (call.q_lengths.defined()) return host_lengths(call.q_lengths);
  return std::vector<std::int64_t>(static_cast<std::size_t>(batch), call.q_offset + tq);
}

std::vector<std::int64_t> key_lengths(const ScoreExprCall& call, std::int64_t batch, std::int64_t tk) {
  if (call.kv_lengths.defined()) return host_lengths(call.kv_lengths);
  return std::vector<std::int64_t>(static_cast<std::size_t>(batch), tk);
}

}  // namespace attnlab::expr
