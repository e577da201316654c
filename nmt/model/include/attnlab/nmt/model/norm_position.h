#pragma once
// Where the norm of the residual blocks sits ([model] norm_position): "post" (the paper:
// Norm(x + Dropout(Sublayer(x)))), "pre" (x + Dropout(Sublayer(Norm(x))), and one more norm at
// the top of each stack) or "deepnorm" (post-norm with DeepNet's residual scale and initial
// weights; transformer.h).
#include <cstdint>

#include "attnlab/name_table.h"

namespace attnlab::nmt {

enum class NormPosition : std::uint8_t { post, pre, deepnorm };

inline constexpr auto kNormPositions = name_table<NormPosition>(
    "norm position", {{NormPosition::post, "post"}, {NormPosition::pre, "pre"}, {NormPosition::deepnorm, "deepnorm"}});

}  // namespace attnlab::nmt
