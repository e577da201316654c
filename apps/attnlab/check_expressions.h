#pragma once
// attnlab check's section on score expressions (check_expressions.cpp).
#include <cstdio>

#include "attnlab/nmt/suite/suite.h"

namespace attnlab::app {

// Prints, for each distinct set of expressions among the suite's rows, the rows, each site's
// expressions, the tensors and the compiled kernels' cache state, to `out`. Nothing when no row has
// any.
void print_expressions(const nmt::Suite& suite, std::FILE* out = stdout);

}  // namespace attnlab::app
