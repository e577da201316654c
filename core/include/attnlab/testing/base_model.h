#pragma once
// The paper's base model (Vaswani et al. 2017, Table 3 "base"), the shapes the benchmarks measure
// and the tests that reason about the base model use, defined once: the defaults of ModelDims
// (d_model 512, 8 heads of d_k = d_v = 64, d_ff 2048), 6 + 6 layers, P_drop 0.1 and the shared
// 37000-piece vocabulary of WMT14 English-German.
#include <cstdint>

#include "attnlab/plugin/context.h"

namespace attnlab::testing::base_model {

inline constexpr ModelDims kDims{};
inline constexpr std::int64_t kModel = kDims.d_model;
inline constexpr std::int64_t kFF = kDims.d_ff;
inline constexpr std::int64_t kHeads = kDims.n_heads;
inline constexpr std::int64_t kHead = kDims.d_k;
inline constexpr std::int64_t kLayers = 6;  // encoder and decoder each
inline constexpr std::int64_t kVocab = 37000;
inline constexpr double kDrop = 0.1;

}  // namespace attnlab::testing::base_model
