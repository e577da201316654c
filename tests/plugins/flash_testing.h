#pragma once
// Helpers of the flash tests on the CPU (test_flash.cpp, test_flash_positions.cpp): f64 tensors
// from values, and key padding masks from key lengths.
#include <cstdint>
#include <limits>
#include <vector>

#include "attnlab/tensor.h"

namespace attnlab::testing {

inline Tensor f64(const Shape& shape, std::vector<double> values) { return Tensor::from_vector<double>(shape, values); }

// [B, Tk] additive mask: batch row b sees its first lengths[b] keys.
inline Tensor mask_from_lengths(const std::vector<std::int64_t>& lengths, std::int64_t tk) {
  std::vector<double> m;
  for (std::int64_t len : lengths)
    for (std::int64_t j = 0; j < tk; ++j) m.push_back(j < len ? 0.0 : -std::numeric_limits<double>::infinity());
  return f64({static_cast<std::int64_t>(lengths.size()), tk}, m);
}

}  // namespace attnlab::testing
