#pragma once
// Program nodes as statements of C++ (the CPU kernels, compiled by the system's compiler) or CUDA
// C++ (the device functions NVRTC compiles into flash's kernels): one `const` local per node, in
// the program's order. The generated code expects in scope: `score` (the scalar type), the
// integers b, h, q_idx, kv_idx, q_len, kv_len, and `t0`, `t1`, ... pointing at each tensor's data.
// Integers are 32-bit `int` (the checks proved every integer node fits), booleans `int` 0 / 1.
#include <string>
#include <vector>

#include "expr/ir.h"

namespace attnlab::expr {

struct Dialect {
  bool cuda = false;
  std::string real = "float";  // the scalar type of reals: float or double
};

// The statements of the nodes in `emit` that are not in `done` (then added to `done`), each line
// starting with `indent`.
std::string emit_nodes(const Program& program, const std::vector<bool>& emit, std::vector<bool>& done,
                       const std::vector<TensorSpec>& tensors, const Dialect& dialect, const std::string& indent);

// How node `n` is named in the statements: its local, a literal for a constant, a variable's name.
std::string value_of(const Program& program, int n, const Dialect& dialect);
// The local holding load node `n`'s flat offset into its tensor.
std::string offset_of(int n);

// The helpers the statements call (integer division and remainder rounding down, saturating
// conversion, sign, sigmoid, the real functions for the dialect's scalar), as source text.
std::string helpers(const Dialect& dialect);

}  // namespace attnlab::expr
