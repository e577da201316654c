#pragma once
// Backend kernels of shape_ops.cpp. They only move bytes, so they work for every dtype (the
// element size picks the copy width). Tensors arrive checked and allocated, all contiguous.
#include <cstdint>
#include <vector>

#include "attnlab/tensor.h"

namespace attnlab::detail {

// out.shape[i] = x.shape[dims[i]]; dims is a normalized permutation of 0..rank-1.
void permute_cpu(const Tensor& x, const std::vector<int>& dims, Tensor& out);
// x viewed as [outer, extent, inner] along `axis` (normalized); outs[p] receives the rows
// [offset_p, offset_p + outs[p].dim(axis)) of the middle axis, pieces in order.
void split_cpu(const Tensor& x, int axis, std::vector<Tensor>& outs);
// The inverse of split_cpu: parts laid side by side along `axis` into out.
void concat_cpu(const std::vector<Tensor>& parts, int axis, Tensor& out);

// The same on a CUDA device (shape_ops_cuda.cu; permute up to rank 8).
void permute_cuda(const Tensor& x, const std::vector<int>& dims, Tensor& out);
void split_cuda(const Tensor& x, int axis, std::vector<Tensor>& outs);
void concat_cuda(const std::vector<Tensor>& parts, int axis, Tensor& out);

}  // namespace attnlab::detail
