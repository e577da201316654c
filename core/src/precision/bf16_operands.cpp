#include "attnlab/bf16_operands.h"

#include <unordered_map>

#include "attnlab/ops/cast.h"
#include "attnlab/env.h"
#include "ops/cast_node.h"

namespace attnlab {
namespace {
thread_local Bf16Operands* t_scope = nullptr;
}  // namespace

// Keyed by the source's TensorImpl. The entry's weak pointer tells a live source from a freed one
// (whose storage goes as usual; make_shared keeps the impl's own block, and so its address, until
// the entry goes).
struct Bf16Operands::State {
  struct Entry {
    std::weak_ptr<TensorImpl> source;
    Tensor operand;  // what the GEMMs took, once made
    Tensor copy;     // provide()'s copy, until first used
  };
  std::unordered_map<const TensorImpl*, Entry> entries;
  Counts counts;

  Entry* live(const Tensor& t) {
    auto it = entries.find(t.impl());
    if (it == entries.end() || it->second.source.lock() != t.impl_ptr()) return nullptr;
    return &it->second;
  }
};

bool bf16_operands_on(Precision precision) {
  return precision == Precision::bf16 && !env::flag("ATTNLAB_NO_BF16_OPERANDS");
}

bool bf16_logits_on(Precision precision) {
  return precision == Precision::bf16 && !env::flag("ATTNLAB_NO_BF16_LOGITS");
}

Bf16Operands::Bf16Operands() : state_(std::make_unique<State>()), outer_(t_scope) { t_scope = this; }
Bf16Operands::~Bf16Operands() { t_scope = outer_; }

void Bf16Operands::provide(const Tensor& source, const Tensor& copy) {
  ATTNLAB_CHECK(detail::is_bf16_copy_of(copy, source),
                "Bf16Operands::provide: the copy of an f32 tensor must be bf16 of its shape on its device, got {} "
                "for {}",
                copy.defined() ? copy.str() : "undefined", source.defined() ? source.str() : "undefined");
  state_->entries[source.impl()] = {source.impl_ptr(), Tensor(), copy};
}

Bf16Operands::Counts Bf16Operands::counts() const { return state_->counts; }

namespace detail {

Tensor bf16_operand(const Tensor& t) {
  if (t.dtype() == DType::bf16 || t_scope == nullptr) return cast(t, DType::bf16);
  Bf16Operands::State& s = *t_scope->state_;
  if (Bf16Operands::State::Entry* e = s.live(t)) {
    if (e->operand.defined()) {
      ++s.counts.reused;
      return e->operand;
    }
    if (e->copy.defined()) {
      ++s.counts.provided;
      e->operand = cast_from_copy(t, e->copy);
      e->copy = Tensor();
      return e->operand;
    }
  }
  ++s.counts.cast;
  Tensor operand = cast(t, DType::bf16);
  s.entries[t.impl()] = {t.impl_ptr(), operand, Tensor()};
  return operand;
}

}  // namespace detail
}  // namespace attnlab
