#include <cstring>
#include <vector>

#include "cpu/parallel.h"
#include "ops/embedding_kernels.h"
#include "ops/op_util.h"

namespace attnlab::detail {

std::string embedding_id_rule(std::int64_t vocab) {
  return fmt::format("for vocabulary size V = {} (ids must be in [0, {}))", vocab, vocab);
}

void embedding_check_ids_cpu(const Tensor& ids, std::int64_t vocab) {
  dispatch_index("embedding", ids.dtype(), [&](auto tag) {
    using I = typename decltype(tag)::type;
    const I* pi = ids.data<I>();
    const std::int64_t n = ids.numel();
    for (std::int64_t i = 0; i < n; ++i) {
      const auto id = static_cast<std::int64_t>(pi[i]);
      ATTNLAB_CHECK(id >= 0 && id < vocab, "embedding: id {} at position {} is out of range {}", id, i,
                    embedding_id_rule(vocab));
    }
  });
}

void embedding_forward_cpu(const Tensor& weight, const Tensor& ids, Tensor& out) {
  dispatch_float("embedding", weight.dtype(), [&](auto ftag) {
    using T = typename decltype(ftag)::type;
    dispatch_index("embedding", ids.dtype(), [&](auto itag) {
      using I = typename decltype(itag)::type;
      const T* pw = weight.data<T>();
      const I* pi = ids.data<I>();
      T* po = out.data<T>();
      const std::int64_t d = weight.dim(1);
      cpu::parallel_for(ids.numel(), cpu::row_grain(d), [&](std::int64_t s, std::int64_t e) {
        for (std::int64_t n = s; n < e; ++n) {
          const T* src = pw + static_cast<std::int64_t>(pi[n]) * d;
          std::memcpy(po + n * d, src, static_cast<std::size_t>(d) * sizeof(T));
        }
      });
    });
  });
}

void embedding_backward_cpu(const Tensor& dout, const Tensor& ids, Tensor& dweight) {
  dispatch_float("embedding_backward", dweight.dtype(), [&](auto ftag) {
    using T = typename decltype(ftag)::type;
    dispatch_index("embedding_backward", ids.dtype(), [&](auto itag) {
      using I = typename decltype(itag)::type;
      const T* pg = dout.data<T>();
      const I* pi = ids.data<I>();
      T* pw = dweight.data<T>();
      const std::int64_t vocab = dweight.dim(0);
      const std::int64_t d = dweight.dim(1);
      const std::int64_t n = ids.numel();
      std::memset(pw, 0, static_cast<std::size_t>(vocab * d) * sizeof(T));
      // Stable counting sort of the positions by id: the positions of row r are
      // order[start[r] .. start[r + 1]) in increasing order. Serial and O(N + V).
      std::vector<std::int64_t> start(static_cast<std::size_t>(vocab) + 1, 0);
      for (std::int64_t i = 0; i < n; ++i) ++start[static_cast<std::size_t>(pi[i]) + 1];
      std::vector<std::int64_t> rows;  // the distinct ids, ascending
      for (std::int64_t r = 0; r < vocab; ++r) {
        if (start[static_cast<std::size_t>(r) + 1] > 0) rows.push_back(r);
        start[static_cast<std::size_t>(r) + 1] += start[static_cast<std::size_t>(r)];
      }
      std::vector<std::int64_t> order(static_cast<std::size_t>(n));
      {
        std::vector<std::int64_t> fill(start.begin(), start.end() - 1);
        for (std::int64_t i = 0; i < n; ++i) order[static_cast<std::size_t>(fill[static_cast<std::size_t>(pi[i])]++)] = i;
      }
      // One thread owns each distinct row and adds its gradient rows in position order, so there
      // are no races and the sums do not depend on how the rows are split among threads.
      const auto unique = static_cast<std::int64_t>(rows.size());
      const std::int64_t avg = unique > 0 ? n / unique : 1;
      cpu::parallel_for(unique, cpu::row_grain(d * (avg > 0 ? avg : 1)), [&](std::int64_t s, std::int64_t e) {
        for (std::int64_t u = s; u < e; ++u) {
          const std::int64_t r = rows[static_cast<std::size_t>(u)];
          T* dst = pw + r * d;
          for (std::int64_t k = start[static_cast<std::size_t>(r)]; k < start[static_cast<std::size_t>(r) + 1]; ++k) {
            const T* src = pg + order[static_cast<std::size_t>(k)] * d;
            for (std::int64_t j = 0; j < d; ++j) dst[j] += src[j];
          }
        }
      });
    });
  });
}

}  // namespace attnlab::detail
