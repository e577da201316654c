// CPU kernels of permute, split and concat: pure data movement, any dtype.
#include <algorithm>
#include <cstddef>
#include <cstring>

#include "cpu/parallel.h"
#include "ops/op_util.h"
#include "ops/shape_ops_kernels.h"

namespace attnlab::detail {
namespace {

// A permutation reduced to its essentials: size-1 axes dropped and runs of output axes that are
// also consecutive (and in order) in the input merged into one axis. [B, T, H, D] -> [B, H, T, D]
// stays 4 axes whose last one is contiguous in the input; [N, C] -> [C, N] stays a 2-D transpose.
struct PermutePlan {
  std::vector<std::int64_t> extents;  // per output axis
  std::vector<std::int64_t> strides;  // input stride (elements) of each output axis
};

PermutePlan plan_permute(const Shape& shape, const std::vector<int>& dims) {
  const int rank = shape.rank();
  std::vector<int> new_index(static_cast<std::size_t>(rank), -1);
  std::vector<std::int64_t> in_dims;
  for (int a = 0; a < rank; ++a) {
    if (shape[a] == 1) continue;
    new_index[static_cast<std::size_t>(a)] = static_cast<int>(in_dims.size());
    in_dims.push_back(shape[a]);
  }
  // Groups of input axes [first, last], in output order.
  struct Group {
    int first, last;
  };
  std::vector<Group> groups;
  for (int d : dims) {
    const int k = new_index[static_cast<std::size_t>(d)];
    if (k < 0) continue;
    if (!groups.empty() && groups.back().last + 1 == k)
      groups.back().last = k;
    else
      groups.push_back({k, k});
  }
  // Input strides of the (squeezed) input axes.
  std::vector<std::int64_t> in_strides(in_dims.size(), 1);
  for (int a = static_cast<int>(in_dims.size()) - 2; a >= 0; --a)
    in_strides[static_cast<std::size_t>(a)] =
        in_strides[static_cast<std::size_t>(a) + 1] * in_dims[static_cast<std::size_t>(a) + 1];
  PermutePlan plan;
  for (const Group& g : groups) {
    std::int64_t extent = 1;
    for (int a = g.first; a <= g.last; ++a) extent *= in_dims[static_cast<std::size_t>(a)];
    plan.extents.push_back(extent);
    plan.strides.push_back(in_strides[static_cast<std::size_t>(g.last)]);
  }
  return plan;
}

// The last output axis is contiguous in the input (the head split [B, T, H, D] -> [B, H, T, D] and
// its inverse): every output row is one memcpy of a contiguous input run, the rows walked with an
// odometer over the other output axes.
template <typename W>
void permute_rows(const std::byte* src, std::byte* dst, const PermutePlan& plan) {
  const std::size_t m = plan.extents.size();
  const std::int64_t len = plan.extents[m - 1];
  std::int64_t rows = 1;
  for (std::size_t i = 0; i + 1 < m; ++i) rows *= plan.extents[i];
  const auto* s = reinterpret_cast<const W*>(src);
  auto* d = reinterpret_cast<W*>(dst);
  const std::size_t run_bytes = static_cast<std::size_t>(len) * sizeof(W);
  cpu::parallel_for(rows, cpu::row_grain(len), [&](std::int64_t begin, std::int64_t end) {
    // Multi-index of row `begin` over the outer output axes, and its input offset.
    std::vector<std::int64_t> idx(m > 0 ? m - 1 : 0, 0);
    std::int64_t offset = 0;
    std::int64_t rem = begin;
    for (std::size_t i = m - 1; i-- > 0;) {
      idx[i] = rem % plan.extents[i];
      rem /= plan.extents[i];
      offset += idx[i] * plan.strides[i];
    }
    for (std::int64_t r = begin; r < end; ++r) {
      W* out = d + r * len;
      std::memcpy(out, s + offset, run_bytes);
      for (std::size_t i = m - 1; i-- > 0;) {  // odometer step
        offset += plan.strides[i];
        if (++idx[i] < plan.extents[i]) break;
        offset -= idx[i] * plan.strides[i];
        idx[i] = 0;
      }
    }
  });
}

// The last output axis is strided in the input: some other output axis q has input stride 1.
// Copies in square tiles over the (q, last) pair so that both the reads (along q) and the writes
// (along the last axis) stay within a few cache lines; the other axes index whole 2-D slices.
template <typename W>
void permute_tiled(const std::byte* src, std::byte* dst, const PermutePlan& plan) {
  constexpr std::int64_t kTile = 32;
  const std::size_t m = plan.extents.size();
  std::size_t q = 0;
  while (plan.strides[q] != 1) ++q;
  std::vector<std::int64_t> out_strides(m, 1);
  for (std::size_t i = m - 1; i-- > 0;) out_strides[i] = out_strides[i + 1] * plan.extents[i + 1];
  std::vector<std::size_t> others;  // every axis but q and the last, outermost first
  std::int64_t slices = 1;
  for (std::size_t i = 0; i + 1 < m; ++i)
    if (i != q) {
      others.push_back(i);
      slices *= plan.extents[i];
    }
  const std::int64_t na = plan.extents[q], nb = plan.extents[m - 1];
  const std::int64_t in_b = plan.strides[m - 1], out_a = out_strides[q];
  const std::int64_t ta = (na + kTile - 1) / kTile, tb = (nb + kTile - 1) / kTile;
  const auto* s = reinterpret_cast<const W*>(src);
  auto* d = reinterpret_cast<W*>(dst);
  cpu::parallel_for(slices * ta * tb, std::max<std::int64_t>(1, cpu::kElementwiseGrain / (kTile * kTile)),
                    [&](std::int64_t begin, std::int64_t end) {
                      for (std::int64_t item = begin; item < end; ++item) {
                        const std::int64_t b0 = (item % tb) * kTile;
                        const std::int64_t a0 = (item / tb % ta) * kTile;
                        std::int64_t rem = item / (ta * tb), in_off = 0, out_off = 0;
                        for (std::size_t k = others.size(); k-- > 0;) {
                          const std::size_t i = others[k];
                          const std::int64_t idx = rem % plan.extents[i];
                          rem /= plan.extents[i];
                          in_off += idx * plan.strides[i];
                          out_off += idx * out_strides[i];
                        }
                        const std::int64_t a1 = std::min(na, a0 + kTile), b1 = std::min(nb, b0 + kTile);
                        for (std::int64_t a = a0; a < a1; ++a) {
                          const W* in = s + in_off + a;
                          W* out = d + out_off + a * out_a;
                          for (std::int64_t b = b0; b < b1; ++b) out[b] = in[b * in_b];
                        }
                      }
                    });
}

// Calls fn(W{}) with W an unsigned word of the dtype's size.
template <typename Fn>
void dispatch_size(std::size_t size, Fn&& fn) {
  switch (size) {
    case 1: return fn(std::uint8_t{});
    case 2: return fn(std::uint16_t{});
    case 4: return fn(std::uint32_t{});
    case 8: return fn(std::uint64_t{});
    default: break;
  }
  throw Error(fmt::format("permute: unsupported element size {}", size));
}

}  // namespace

void permute_cpu(const Tensor& x, const std::vector<int>& dims, Tensor& out) {
  if (x.numel() == 0) return;
  const PermutePlan plan = plan_permute(x.shape(), dims);
  const auto* src = static_cast<const std::byte*>(x.raw_data());
  auto* dst = static_cast<std::byte*>(out.raw_data());
  if (plan.extents.size() <= 1 && (plan.strides.empty() || plan.strides[0] == 1)) {
    std::memcpy(dst, src, x.nbytes());  // the identity after reduction
    return;
  }
  dispatch_size(dtype_size(x.dtype()), [&](auto word) {
    using W = decltype(word);
    if (plan.strides.back() == 1)
      permute_rows<W>(src, dst, plan);
    else
      permute_tiled<W>(src, dst, plan);
  });
}

void split_cpu(const Tensor& x, int axis, std::vector<Tensor>& outs) {
  const Shape& shape = x.shape();
  const std::int64_t outer = shape.outer(axis);
  const std::int64_t inner = shape.inner(axis + 1);
  const std::size_t esize = dtype_size(x.dtype());
  const std::size_t row_bytes = static_cast<std::size_t>(shape[axis] * inner) * esize;
  if (x.numel() == 0) return;
  const auto* src = static_cast<const std::byte*>(x.raw_data());
  std::vector<std::byte*> dst;
  std::vector<std::size_t> piece_bytes, offsets;
  std::size_t offset = 0;
  for (Tensor& o : outs) {
    const std::size_t b = static_cast<std::size_t>(o.dim(axis) * inner) * esize;
    dst.push_back(static_cast<std::byte*>(o.raw_data()));
    piece_bytes.push_back(b);
    offsets.push_back(offset);
    offset += b;
  }
  cpu::parallel_for(outer, cpu::row_grain(shape[axis] * inner), [&](std::int64_t s, std::int64_t e) {
    for (std::int64_t r = s; r < e; ++r) {
      const std::byte* row = src + static_cast<std::size_t>(r) * row_bytes;
      for (std::size_t p = 0; p < dst.size(); ++p)
        if (piece_bytes[p] > 0)
          std::memcpy(dst[p] + static_cast<std::size_t>(r) * piece_bytes[p], row + offsets[p],
                      piece_bytes[p]);
    }
  });
}

void concat_cpu(const std::vector<Tensor>& parts, int axis, Tensor& out) {
  const Shape& shape = out.shape();
  const std::int64_t outer = shape.outer(axis);
  const std::int64_t inner = shape.inner(axis + 1);
  const std::size_t esize = dtype_size(out.dtype());
  const std::size_t row_bytes = static_cast<std::size_t>(shape[axis] * inner) * esize;
  if (out.numel() == 0) return;
  auto* dst = static_cast<std::byte*>(out.raw_data());
  std::vector<const std::byte*> src;
  std::vector<std::size_t> piece_bytes, offsets;
  std::size_t offset = 0;
  for (const Tensor& p : parts) {
    const std::size_t b = static_cast<std::size_t>(p.dim(axis) * inner) * esize;
    src.push_back(static_cast<const std::byte*>(p.raw_data()));
    piece_bytes.push_back(b);
    offsets.push_back(offset);
    offset += b;
  }
  cpu::parallel_for(outer, cpu::row_grain(shape[axis] * inner), [&](std::int64_t s, std::int64_t e) {
    for (std::int64_t r = s; r < e; ++r) {
      std::byte* row = dst + static_cast<std::size_t>(r) * row_bytes;
      for (std::size_t p = 0; p < src.size(); ++p)
        if (piece_bytes[p] > 0)
          std::memcpy(row + offsets[p], src[p] + static_cast<std::size_t>(r) * piece_bytes[p],
                      piece_bytes[p]);
    }
  });
}

}  // namespace attnlab::detail
