#include "attnlab/ops/embedding.h"
#include "attnlab/plugin/attention.h"

namespace attnlab {

void KVCache::reorder(const std::vector<std::int64_t>& rows) {
  if (!keys.defined()) return;
  keys = select_rows(keys, rows);
  values = select_rows(values, rows);
}

}  // namespace attnlab
