#pragma once
// What a plugin is built with: the model's dimensions, dropout rates, device, dtype, seed and
// the plugin's own validated options.
#include <cstdint>
#include <memory>
#include <map>
#include <string>
#include <string_view>

#include "attnlab/device.h"
#include "attnlab/dtype.h"
#include "attnlab/plugin/options.h"
#include "attnlab/random.h"

namespace attnlab {

class Registry;
class Dropout;
namespace expr {
class ScoreExpr;
}

struct ModelDims {
  std::int64_t d_model = 512;
  std::int64_t n_heads = 8;
  std::int64_t d_k = 64;         // per-head query/key size; may differ from d_model / n_heads
  std::int64_t d_v = 64;         // per-head value size; h * d_v need not equal d_model
  std::int64_t d_ff = 2048;
  std::int64_t max_length = 1024;  // longest sequence a positional encoding must serve
};

// The paper's dropout sites. residual: on each sub-layer output before the residual add;
// embedding: on the sums of embeddings and positional encodings; attention: on the attention
// weights; ffn: on the hidden activation of the feed-forward network.
struct DropoutRates {
  double residual = 0.1;
  double embedding = 0.1;
  double attention = 0.0;
  double ffn = 0.0;
};

// Where a dropout module is applied, and so what the axes of its input mean:
//   embedding  the sums of token embeddings and positions, [B, T, d_model] (a T axis of tokens);
//   residual   a sub-layer's output before its residual add, [B, T, d_model];
//   attention  the attention weights, [B, h, Tq, Tk] (axis 1: heads);
//   ffn        the feed-forward network's hidden activation, [B, T, d_ff].
enum class DropoutSite : std::uint8_t { embedding, residual, attention, ffn };
std::string_view dropout_site_name(DropoutSite site);

struct BuildContext {
  ModelDims dims;
  DropoutRates dropout;
  // The model's layer_norm_eps: the epsilon of its norms (norm plugins take it from here).
  double norm_eps = 1e-6;
  Device device = Device::cpu();
  DType dtype = DType::f32;
  std::uint64_t seed = 1;
  // Draws for parameter initialisation; plugins take their initial values from it in a fixed
  // order so that the same seed gives the same weights.
  Generator* init = nullptr;
  // Shared by every dropout of the model during training.
  Generator* dropout_rng = nullptr;
  // The plugin's own options, validated against its declaration.
  Options options;
  // The registry the plugin was found in, and the dropout plugin to use at every site with the
  // options the experiment gives it (its `rate` is set per site by make_dropout).
  const Registry* registry = nullptr;
  std::string dropout_plugin = "standard";
  std::map<std::string, OptionValue> dropout_options;
  // A dropout module's site (set by make_dropout for the dropout plugin it builds).
  DropoutSite dropout_site = DropoutSite::residual;
  // The optimizer step being trained (0 before the first update), owned by the model and set by
  // the trainer before each update; null outside a model. For schedules of the step (a dropout
  // rate that changes during training).
  const std::int64_t* training_step = nullptr;
  // Attention plugins: the score expressions of the site being built (attnlab/expr/score_expr.h),
  // null for none. ProjectedAttention creates their tensors (learned ones as parameters named
  // after them) and refuses them for a plugin that does not apply them.
  std::shared_ptr<const expr::ScoreExpr> score_expr;

  // A dropout module of the configured dropout plugin with rate p at `site`.
  std::shared_ptr<Dropout> make_dropout(double p, DropoutSite site) const;
};

}  // namespace attnlab
