#include "nmt_testing.h"

#include <doctest/doctest.h>

#include <random>
#include <vector>

#include "attnlab/autograd.h"
#include "attnlab/nmt/checkpoint/checkpoint_store.h"
#include "attnlab/ops.h"
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

PaddedBatch padded_batch(std::int64_t vocab) {
  std::mt19937_64 rng(21);
  const std::int64_t b = 4, s = 7, t = 6;
  std::vector<std::int64_t> src(b * s, 0), tin(b * t, 0), tout(b * t, 0);
  std::int64_t tokens = 0;
  for (std::int64_t r = 0; r < b; ++r) {
    for (std::int64_t i = 0; i < s - r; ++i) src[r * s + i] = 3 + static_cast<std::int64_t>(rng() % (vocab - 3));
    for (std::int64_t i = 0; i < t - r % 3; ++i) {
      tin[r * t + i] = 3 + static_cast<std::int64_t>(rng() % (vocab - 3));
      tout[r * t + i] = 3 + static_cast<std::int64_t>(rng() % (vocab - 3));
      ++tokens;
    }
  }
  return {Tensor::from_vector<std::int64_t>({b, s}, src), Tensor::from_vector<std::int64_t>({b, t}, tin),
          Tensor::from_vector<std::int64_t>({b, t}, tout), tokens};
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

void check_small_model_gradients(TransformerConfig config) {
  config.dims = {.d_model = 4, .n_heads = 2, .d_k = 2, .d_v = 2, .d_ff = 6, .max_length = 16};
  const auto result = whole_model_gradcheck(config);
  CHECK_MESSAGE(result.ok, result.message);
}

std::vector<double> full_logits_equal_incremental(Transformer& model) {
  NoGradGuard no_grad;
  const Tensor src = Tensor::from_vector<std::int64_t>({2, 4}, {4, 5, 6, 3, 7, 8, 3, 0});
  const Tensor tgt = Tensor::from_vector<std::int64_t>({2, 6}, {2, 4, 5, 6, 7, 8, 2, 8, 9, 10, 4, 5});
  const auto full = model.forward(src, tgt).to_vector<double>();
  Encoded enc = model.encode(src);
  DecoderState state = model.start_decoding();
  std::vector<Tensor> steps;
  for (const Tensor& step : split(tgt, 1, {1, 1, 1, 1, 1, 1})) steps.push_back(model.project(model.decode(step, enc, &state)));
  const auto inc = concat(steps, 1).to_vector<double>();
  REQUIRE(inc.size() == full.size());
  for (std::size_t i = 0; i < inc.size(); ++i) REQUIRE(inc[i] == doctest::Approx(full[i]).epsilon(1e-5));
  return full;
}

ExperimentConfig tiny_experiment(const std::filesystem::path& root, const std::string& run, const std::string& extra) {
  const std::string toml = R"([experiment]
name = "resume"
seed = 3
[data]
cache_dir = "cache"
[data.synthetic]
train_pairs = 300
dev_pairs = 20
test_pairs = 20
seed = 2
[vocab]
size = 120
)" + std::string(kTinyModelTable) + R"(dropout = 0.1
attention_dropout = 0.1
[training]
batch_tokens = 300
max_steps = 12
warmup_steps = 4
eval_every = 5
log_every = 3
checkpoint_every = 4
checkpoint_every_seconds = 0
keep_checkpoints = 2
)";
  ExperimentConfig c = parse_experiment(toml + extra, (root / "resume.toml").string());
  c.run_dir = (root / run).string();
  return c;
}

std::vector<std::vector<float>> final_state(const std::filesystem::path& run_dir) {
  Checkpoint ck = *CheckpointStore(run_dir, 2).latest().checkpoint;
  std::vector<std::vector<float>> out;
  for (const auto& p : ck.parameters) out.push_back(p.tensor.to_vector<float>());
  for (const auto& m : ck.optimizer.m) out.push_back(m.tensor.to_vector<float>());
  for (const auto& v : ck.optimizer.v) out.push_back(v.tensor.to_vector<float>());
  return out;
}

}  // namespace attnlab::nmt::testing
