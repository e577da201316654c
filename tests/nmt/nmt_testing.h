#pragma once
// Shared helpers of the nmt tests: the in-tree plugins, tiny model configurations.
#include "attnlab/nmt/model/transformer.h"
#include "attnlab/plugin/loader.h"

namespace attnlab::nmt::testing {

// A registry with every in-tree plugin loaded (once per process).
const Registry& plugins();

// A small model: d_model 8, 2 heads, d_k 3, d_v 5, d_ff 12, one layer each side, no dropout.
TransformerConfig tiny_config(std::int64_t vocab = 11);

}  // namespace attnlab::nmt::testing
