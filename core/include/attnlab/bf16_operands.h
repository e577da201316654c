#pragma once
// The bf16 operands of a training step's GEMMs, made once per tensor.
//
// Under bf16 precision matmul and linear cast each f32 operand to bf16 (attnlab/precision.h). In
// a Transformer step the same tensor is cast several times: a layer's input for its query, key
// and value projections, the encoder's output for the keys and values of every decoder layer, and
// every weight once per forward although only the optimizer changes it. While a Bf16Operands
// scope is alive on a thread, the GEMMs there cast each tensor once and reuse the copy, with its
// place on the tape (the gradients of all its uses meet there), and take a weight's copy from
// provide() instead of casting it: AdamOptimizer writes one for each matrix in its update
// (attnlab/ops/adam.h). The forward computes the same bits as without the scope; the gradients
// of a tensor cast once for several GEMMs are summed before the cast's backward instead of after
// it (the same f32 sums in another order).
//
// For a step's forward only: no tensor may change in place while the scope lives, and it holds
// each copy until it ends (in training the tape holds them anyway until the backward, so end the
// scope before the backward, which frees them as it goes).
#include <cstdint>
#include <memory>

#include "attnlab/precision.h"
#include "attnlab/tensor.h"

namespace attnlab {

// Whether a training step under `precision` runs its forward in a Bf16Operands scope with the
// optimizer's weight copies: under bf16, unless ATTNLAB_NO_BF16_OPERANDS=1 (cast at every use,
// for comparison). The trainer and bench_train_step decide with it.
bool bf16_operands_on(Precision precision);
// Whether a training step under `precision` writes its logits in bf16 (matmul's bf16_out) for
// cross_entropy to read: under bf16, unless ATTNLAB_NO_BF16_LOGITS=1 (f32 logits, for comparison).
// Half the memory and traffic of the widest tensor of a step ([tokens, vocabulary]).
bool bf16_logits_on(Precision precision);

class Bf16Operands;
namespace detail {
// t's bf16 operand: through the calling thread's Bf16Operands scope where one is alive, else
// cast(t, bf16). t itself when it is bf16 already.
Tensor bf16_operand(const Tensor& t);
}  // namespace detail

class Bf16Operands {
 public:
  // Installs the scope on the calling thread (replacing an outer one until this one ends).
  Bf16Operands();
  ~Bf16Operands();
  Bf16Operands(const Bf16Operands&) = delete;
  Bf16Operands& operator=(const Bf16Operands&) = delete;

  // `copy` holds bf16(source) exactly: the GEMMs take it as source's bf16 operand. source f32,
  // copy bf16 of the same shape on the same device (else an Error).
  void provide(const Tensor& source, const Tensor& copy);

  struct Counts {
    std::int64_t cast = 0;      // operands cast (the first use of a tensor)
    std::int64_t reused = 0;    // uses served by an earlier cast or copy
    std::int64_t provided = 0;  // operands taken from provide()'s copies (their first use)
  };
  Counts counts() const;

 private:
  friend Tensor detail::bf16_operand(const Tensor& t);
  struct State;
  std::unique_ptr<State> state_;
  Bf16Operands* outer_;
};

}  // namespace attnlab
