#include "nmt_testing.h"
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

}  // namespace attnlab::nmt::testing
