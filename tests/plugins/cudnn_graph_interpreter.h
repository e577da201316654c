#pragma once
// A reference interpreter for the cudnn plugin's SDPA graph descriptions: runs the operations in
// order in double precision on host buffers, with the semantics the cuDNN backend documents for
// them, so that the CPU tests can check the graphs' arithmetic (masks, softmax statistics, the
// backward recomputation) against scaled_dot without a GPU.
#include <cstdint>
#include <map>
#include <vector>

#include "sdpa_graph.h"

namespace attnlab::cudnn_attention::testing {

// One buffer per bound tensor, its elements laid out by the tensor's strides (extent() values);
// a by-value scalar is one value.
using Buffers = std::map<std::int64_t, std::vector<double>>;

// 1 + the largest offset of an element of t.
std::int64_t extent(const GraphTensor& t);
// Offset of element (i0, i1, i2, i3) of t.
std::int64_t offset(const GraphTensor& t, const Dims& index);

// Runs the graph: inputs are read from `buffers`, bound outputs are written into it (elements a
// matmul does not compute because of an M/N override are 0, as in buffers the caller zeroed).
// Throws an Error when a tensor is read before it is written or an input is missing.
void run_graph(const SdpaGraph& graph, Buffers& buffers);

}  // namespace attnlab::cudnn_attention::testing
