#pragma once
// Axis rearrangements (each returns a new contiguous tensor; reshape is Tensor::reshape).
#include <vector>

#include "attnlab/tensor.h"

namespace attnlab {

// out.shape[i] = x.shape[dims[i]]; dims a permutation of 0..rank-1 (negative allowed).
Tensor permute(const Tensor& x, const std::vector<int>& dims);
// Swaps two axes.
Tensor transpose(const Tensor& x, int axis0, int axis1);
// Cuts x along `axis` into pieces of the given extents (they must sum to the axis extent).
std::vector<Tensor> split(const Tensor& x, int axis, const std::vector<std::int64_t>& sizes);
// Joins tensors along `axis`; all other extents, the dtype and the device must agree.
Tensor concat(const std::vector<Tensor>& parts, int axis);

}  // namespace attnlab
