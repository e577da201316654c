// permute/split/concat_cuda: unpack the tensors and call the launchers of shape_ops_cuda.cu (CUDA
// builds only).
#include <cstddef>

#include "ops/op_util.h"
#include "ops/shape_ops_cuda.h"
#include "ops/shape_ops_kernels.h"

namespace attnlab::detail {

void permute_cuda(const Tensor& x, const std::vector<int>& dims, Tensor& out) {
  if (x.numel() == 0) return;
  const int rank = x.rank();
  ATTNLAB_CHECK(rank <= cuda::kMaxRank, "permute: tensors on cuda support rank <= {}, got {}", cuda::kMaxRank,
                x.shape().str());
  std::int64_t in_strides[cuda::kMaxRank] = {};
  std::int64_t s = 1;
  for (int a = rank - 1; a >= 0; --a) {
    in_strides[a] = s;
    s *= x.dim(a);
  }
  cuda_shape_ops::PermuteIndex index;
  index.rank = rank;
  for (int i = 0; i < rank; ++i) {
    const int d = dims[static_cast<std::size_t>(i)];
    index.out_dims[i] = x.dim(d);
    index.in_strides[i] = in_strides[d];
  }
  cuda_shape_ops::permute(x.raw_data(), dtype_size(x.dtype()), x.numel(), index, out.raw_data(),
                          x.device().index, cuda::current_stream(x.device().index));
}

void split_cuda(const Tensor& x, int axis, std::vector<Tensor>& outs) {
  if (x.numel() == 0) return;
  const Shape& shape = x.shape();
  const auto outer = static_cast<std::size_t>(shape.outer(axis));
  const std::int64_t inner = shape.inner(axis + 1);
  const std::size_t esize = dtype_size(x.dtype());
  const std::size_t row_bytes = static_cast<std::size_t>(shape[axis] * inner) * esize;
  const auto* src = static_cast<const std::byte*>(x.raw_data());
  std::size_t offset = 0;
  for (Tensor& o : outs) {
    const std::size_t b = static_cast<std::size_t>(o.dim(axis) * inner) * esize;
    cuda_shape_ops::copy_rows(o.raw_data(), b, src + offset, row_bytes, b, outer, x.device().index,
                              cuda::current_stream(x.device().index));
    offset += b;
  }
}

void concat_cuda(const std::vector<Tensor>& parts, int axis, Tensor& out) {
  if (out.numel() == 0) return;
  const Shape& shape = out.shape();
  const auto outer = static_cast<std::size_t>(shape.outer(axis));
  const std::int64_t inner = shape.inner(axis + 1);
  const std::size_t esize = dtype_size(out.dtype());
  const std::size_t row_bytes = static_cast<std::size_t>(shape[axis] * inner) * esize;
  auto* dst = static_cast<std::byte*>(out.raw_data());
  std::size_t offset = 0;
  for (const Tensor& p : parts) {
    const std::size_t b = static_cast<std::size_t>(p.dim(axis) * inner) * esize;
    cuda_shape_ops::copy_rows(dst + offset, row_bytes, p.raw_data(), b, b, outer, out.device().index,
                              cuda::current_stream(out.device().index));
    offset += b;
  }
}

}  // namespace attnlab::detail
