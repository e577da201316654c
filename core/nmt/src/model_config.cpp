#include "attnlab/nmt/model_config.h"

namespace attnlab::nmt {

TransformerConfig paper_base_config(std::int64_t vocab) {
  TransformerConfig c;
  c.vocab_size = vocab;
  return c;
}

std::int64_t expected_parameter_count(const TransformerConfig& c) {
  const std::int64_t d = c.dims.d_model, h = c.dims.n_heads, dk = c.dims.d_k, dv = c.dims.d_v, ff = c.dims.d_ff;
  // scaled_dot with biases: W_q, W_k [h d_k, d], W_v [h d_v, d], W_o [d, h d_v] and their biases.
  const std::int64_t attention = 2 * (h * dk * d + h * dk) + (h * dv * d + h * dv) + (d * h * dv + d);
  const std::int64_t ffn = (d * ff + ff) + (ff * d + d);  // relu / gelu
  const std::int64_t norm = 2 * d;
  const std::int64_t encoder = c.encoder_layers * (attention + ffn + 2 * norm);
  const std::int64_t decoder = c.decoder_layers * (2 * attention + ffn + 3 * norm);
  return c.vocab_size * d + encoder + decoder;
}

}  // namespace attnlab::nmt
