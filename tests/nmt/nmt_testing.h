#pragma once
// Shared helpers of the nmt tests: the in-tree plugins, tiny model configurations.
#include "attnlab/nmt/model/transformer.h"
#include "attnlab/plugin/loader.h"
#include "attnlab/testing/gradcheck.h"

namespace attnlab::nmt::testing {

// A registry with every in-tree plugin loaded (once per process).
const Registry& plugins();

// A small model: d_model 8, 2 heads, d_k 3, d_v 5, d_ff 12, one layer each side, no dropout.
TransformerConfig tiny_config(std::int64_t vocab = 11);

// Finite-difference check of every parameter of the model `config` builds (f64, evaluation mode,
// seeds 7 and 8) under the label-smoothed loss of two fixed sentence pairs (ids below 7).
attnlab::testing::GradcheckResult whole_model_gradcheck(const TransformerConfig& config);

}  // namespace attnlab::nmt::testing
