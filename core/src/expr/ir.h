#pragma once
// The lowered form of a site's expressions that every backend reads: a list of typed nodes in
// topological order (a node's arguments come before it), with common subexpressions shared. It
// holds score_mod's result, mask_mod's result and, appended by differentiate(), the derivatives
// of score_mod's result with respect to `score` and to each tensor element it reads (reverse
// mode, built from the same nodes). Each backend evaluates the nodes one function needs: the
// forward score_mod and mask_mod, the backward their derivatives.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "attnlab/expr/score_expr.h"

namespace attnlab::expr {

enum class Type : std::uint8_t { integer, real, boolean };
const char* type_name(Type type);

// The variables, numbered as the kernels' argument lists take them.
enum class Var : std::uint8_t { score, b, h, q_idx, kv_idx, q_len, kv_len };
inline constexpr int kVarCount = 7;
const char* var_name(Var var);

enum class Op : std::uint8_t {
  constant,  // `imm_int` (integer, boolean) or `imm_real`
  variable,  // `var`
  load,      // element of tensor `tensor` at the (integer) indices in args, row-major; real
  to_real,   // integer -> real
  to_int,    // real -> integer, toward zero, saturating at the 32-bit range
  neg, logical_not,
  add, sub, mul, div, mod,  // integer (division rounding down, remainder with the divisor's sign) or real
  lt, le, gt, ge, eq, ne,   // boolean of two operands of one type
  logical_and, logical_or,
  select,                   // args: condition, then, else
  abs, sign, min, max,      // integer or real (clamp is lowered to min(max(x, lo), hi))
  exp, log, sqrt, tanh, sigmoid, floor, ceil, pow,  // real
};
const char* op_name(Op op);

struct Node {
  Node(Op o, Type t) : op(o), type(t) {}
  Op op;
  Type type;
  Var var = Var::score;
  int tensor = -1;
  std::vector<int> args;
  std::int64_t imm_int = 0;
  double imm_real = 0.0;
};

// A closed range of values a node can take ([0, 1] for an unknown boolean, [1, 1] true).
struct Interval {
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  bool known_true() const { return lo >= 1.0; }
  bool known_false() const { return hi <= 0.0; }
};

struct Program {
  std::vector<Node> nodes;
  int score = -1;  // score_mod's result (real), or -1
  int mask = -1;   // mask_mod's result (boolean), or -1
  // After differentiate(): d score_mod / d score, and for each tensor element read (a load node
  // of a learned tensor), the derivative of score_mod with respect to it.
  int d_score = -1;
  struct LoadGrad {
    int load;   // the load node (its tensor and indices)
    int grad;   // d score_mod / d that element
  };
  std::vector<LoadGrad> d_loads;

  // Adds a node, or returns the equal node already there (common subexpressions), folding
  // constants of integer and boolean arithmetic.
  int add(Node node);
  int constant_real(double v);
  int constant_int(std::int64_t v);
  // The nodes that `roots` need, in order (a bitmap over the nodes).
  std::vector<bool> live(const std::vector<int>& roots) const;
  // One line per node ("%3 = add.real %1 %2"): the canonical text hashed with the tensors.
  std::string text() const;
};

// Appends the derivatives of program.score (reverse mode) for `learned` tensors.
void differentiate(Program& program, const std::vector<bool>& learned);

// The ranges of the variables for intervals(): the site's limits, or one tile's positions.
struct VarRanges {
  Interval vars[kVarCount];
};
VarRanges static_ranges(const Limits& limits);
// The range of every node over `ranges` (loads: any real). Integer ranges are those of exact
// arithmetic (a 32-bit overflow shows as a range past it).
// With `upto` >= 0, only the nodes up to it are computed (the rest are left unbounded).
std::vector<Interval> intervals(const Program& program, const VarRanges& ranges, int upto = -1);

}  // namespace attnlab::expr
