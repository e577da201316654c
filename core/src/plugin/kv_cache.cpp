#include "attnlab/ops/embedding.h"
#include "attnlab/plugin/attention.h"

namespace attnlab {

void KVCache::reorder(const std::vector<std::int64_t>& rows) {
  if (!keys.defined()) return;
  // Gather whole batch rows with the embedding lookup over [B, rest] views.
  Tensor ids = Tensor::from_vector<std::int64_t>({static_cast<std::int64_t>(rows.size())}, rows)
                   .to(keys.device());
  auto gather = [&](const Tensor& t) {
    Shape shape = t.shape();
    const std::int64_t b = shape[0];
    Tensor flat = t.reshape({b, t.numel() / b});
    shape[0] = static_cast<std::int64_t>(rows.size());
    return embedding(flat, ids).reshape(shape);
  };
  keys = gather(keys);
  values = gather(values);
}

}  // namespace attnlab
