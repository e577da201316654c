#pragma once
// One tolerance table keyed by dtype: |got - want| <= abs + rel * |want|.
#include "attnlab/dtype.h"

namespace attnlab::testing {

struct Tolerance {
  double abs;
  double rel;
};

inline Tolerance tolerance_for(DType dtype) {
  switch (dtype) {
    case DType::f64: return {1e-12, 1e-10};
    case DType::f32: return {1e-5, 1e-5};
    case DType::bf16: return {4e-2, 4e-2};
    default: return {0.0, 0.0};
  }
}

}  // namespace attnlab::testing
