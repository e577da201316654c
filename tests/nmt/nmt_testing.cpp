#include "nmt_testing.h"
#include "attnlab/ops/cross_entropy.h"
#include "support/plugin_testing.h"

namespace attnlab::nmt::testing {

const Registry& plugins() { return attnlab::testing::in_tree_plugins().registry; }

TransformerConfig tiny_config(std::int64_t vocab) {
  TransformerConfig c;
  c.vocab_size = vocab;
  c.encoder_layers = 1;
  c.decoder_layers = 1;
  c.dims = {.d_model = 8, .n_heads = 2, .d_k = 3, .d_v = 5, .d_ff = 12, .max_length = 64};
  c.dropout = {.residual = 0.0, .embedding = 0.0, .attention = 0.0, .ffn = 0.0};
  return c;
}

attnlab::testing::GradcheckResult whole_model_gradcheck(const TransformerConfig& config) {
  Generator init(7), drop(8);
  Transformer model(config, plugins(), init, drop, DType::f64);
  model.eval();
  const auto ids = [](const Shape& shape, const std::vector<std::int64_t>& v) {
    return Tensor::from_vector<std::int64_t>(shape, v);
  };
  const Tensor src = ids({2, 3}, {4, 5, 3, 6, 3, 0});
  const Tensor tgt_in = ids({2, 3}, {2, 4, 5, 2, 6, 0});
  const Tensor tgt_out = ids({6}, {4, 5, 3, 6, 3, 0});
  return attnlab::testing::gradcheck(
      [&](const std::vector<Tensor>&) {
        Tensor logits = model.forward(src, tgt_in).reshape({6, config.vocab_size});
        return cross_entropy(logits, tgt_out, 0.1, 0).loss_sum.reshape({1});
      },
      {}, {}, model.parameters());
}

}  // namespace attnlab::nmt::testing
