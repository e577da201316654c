#pragma once
// Backend kernels of embedding.cpp. weight [V, D] floating, ids any shape i32/i64, same device.
#include <string>

#include "attnlab/tensor.h"

namespace attnlab::detail {

// What an id must be, as the out-of-range error says it (on the CPU and, through an index check,
// on CUDA): "for vocabulary size V = 5 (ids must be in [0, 5))".
std::string embedding_id_rule(std::int64_t vocab);
// Throws an Error naming the first (in row-major order) id outside [0, V), its position and V.
void embedding_check_ids_cpu(const Tensor& ids, std::int64_t vocab);
// out [ids.numel(), D] (any shape with that many elements): out[n, :] = weight[ids[n], :].
// ids already checked.
void embedding_forward_cpu(const Tensor& weight, const Tensor& ids, Tensor& out);
// dweight [V, D] = 0, then dweight[ids[n], :] += dout[n, :] for every n. Each row sums its
// contributions in increasing n, so the result does not depend on the thread count.
void embedding_backward_cpu(const Tensor& dout, const Tensor& ids, Tensor& dweight);

// The same on a CUDA device (embedding_cuda.cu, embedding_backward_cuda.cu), without waiting for
// it: the gather kernel checks the ids, and a bad one is thrown at the host's next wait for the
// device (index_check.h) with the CPU's message; the check function only copies the ids to the
// host when there are too many for that (2^32 - 1 or more). The backward is deterministic and
// sums each row in the CPU's order.
void embedding_check_ids_cuda(const Tensor& ids, std::int64_t vocab);
void embedding_forward_cuda(const Tensor& weight, const Tensor& ids, Tensor& out);
void embedding_backward_cuda(const Tensor& dout, const Tensor& ids, Tensor& dweight);

}  // namespace attnlab::detail
