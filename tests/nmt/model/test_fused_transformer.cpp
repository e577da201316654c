// The model switch fused_kernels: a Transformer trained with the fused blocks (post-norm, DeepNorm,
// pre-norm; layer_norm or rms_norm) follows the same run as one trained with the unfused ops.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "attnlab/autograd.h"
#include "attnlab/nmt/experiment/experiment.h"
#include "attnlab/nmt/train/optimizer.h"
#include "attnlab/ops.h"
#include "nmt_testing.h"

using namespace attnlab;
using namespace attnlab::nmt;

namespace {

struct Run {
  std::vector<double> losses;
  std::vector<std::vector<float>> weights;
  std::vector<std::string> names;
  std::uint64_t dropout_offset = 0;
  std::string block_op;  // the op that produced the decoder output
};

// Trains a small model with every dropout site active for a few Adam steps on random batches.
Run train_steps(bool fused, const std::string& norm_position, const std::string& norm) {
  TransformerConfig c = nmt::testing::tiny_config(13);
  c.norm_position = kNormPositions.parse(norm_position);
  c.norm.name = norm;
  c.encoder_layers = 2;
  c.decoder_layers = 2;
  c.dropout = {.residual = 0.3, .embedding = 0.2, .attention = 0.1, .ffn = 0.1};
  c.fused_kernels = fused;
  Generator init(21), drop(22);
  Transformer model(c, nmt::testing::plugins(), init, drop);
  AdamOptimizer opt(model.named_parameters(), {});
  std::mt19937_64 rng(7);
  auto ids = [&](const Shape& shape) {
    std::vector<std::int64_t> v(static_cast<std::size_t>(shape.numel()));
    for (auto& id : v) id = static_cast<std::int64_t>(1 + rng() % 12);  // 0 is padding
    return Tensor::from_vector<std::int64_t>(shape, v);
  };
  Run run;
  for (std::int64_t step = 1; step <= 4; ++step) {
    const Tensor src = ids({3, 7}), tgt_in = ids({3, 5}), tgt_out = ids({15});
    const Encoded encoded = model.encode(src);
    const Tensor hidden = model.decode(tgt_in, encoded);
    run.block_op = std::string(hidden.grad_fn()->name());
    auto ce = cross_entropy(model.project(hidden).reshape({-1, 13}), tgt_out, 0.1, 0);
    const Tensor loss = scale(ce.loss_sum, 1.0 / ce.tokens.item());
    run.losses.push_back(loss.item());
    loss.backward();
    opt.step(transformer_lr(step, 8, 2, 1.0));
    opt.zero_grad();
  }
  for (const auto& [name, p] : model.named_parameters()) {
    run.weights.push_back(p.to_vector<float>());
    run.names.push_back(name);
  }
  run.dropout_offset = drop.offset();
  return run;
}

}  // namespace

TEST_CASE("training with fused_kernels on and off gives the same losses and weights" * doctest::test_suite("training")) {
  for (const auto& [position, norm] : {std::pair{"post", "layer_norm"}, {"deepnorm", "layer_norm"}, {"post", "rms_norm"},
                                       {"pre", "layer_norm"}, {"pre", "rms_norm"}}) {
    const std::string what = std::string(position) + " " + norm;
    CAPTURE(what);
    const Run fused = train_steps(true, position, norm);
    const Run plain = train_steps(false, position, norm);
    // Pre-norm: the decoder's output is the last pair's normed output (the stack's final norm).
    CHECK(fused.block_op == (std::string(position) == "pre" ? "dropout_add_norm_pair" : "dropout_add_layer_norm"));
    CHECK(plain.block_op == std::string(norm));
    // The same masks from the same stream positions: the generator ends at the same offset.
    CHECK(fused.dropout_offset == plain.dropout_offset);
    CHECK(fused.dropout_offset > 0);
    // On the CPU the fused op runs the unfused arithmetic, so the runs agree to the bit; the
    // tolerance leaves room for float rounding only.
    REQUIRE(fused.losses.size() == plain.losses.size());
    for (std::size_t i = 0; i < fused.losses.size(); ++i)
      CHECK(fused.losses[i] == doctest::Approx(plain.losses[i]).epsilon(1e-6));
    REQUIRE(fused.weights.size() == plain.weights.size());
    for (std::size_t k = 0; k < fused.weights.size(); ++k) {
      CAPTURE(fused.names[k]);
      // The key projection's bias gets only rounding noise as its gradient (softmax ignores a shift
      // shared by all keys), which Adam's normalisation turns into full-size steps: its value
      // follows the summation order of the gradients at the layer input, which DeepNorm's unfused
      // path (one more node, the residual's scale) changes. Every other weight must agree.
      if (std::string(position) == "deepnorm" && fused.names[k].ends_with("w_k.bias")) continue;
      REQUIRE(fused.weights[k].size() == plain.weights[k].size());
      // Bit-identical where the graphs agree (checked below); DeepNorm's rounding-level gradient
      // differences grow through four Adam steps at a rate near 0.1 (up to 3e-6 measured).
      const float abs_tol = std::string(position) == "deepnorm" ? 3e-5f : 1e-6f;
      for (std::size_t i = 0; i < fused.weights[k].size(); ++i)
        REQUIRE(std::abs(fused.weights[k][i] - plain.weights[k][i]) <= abs_tol + 1e-5f * std::abs(plain.weights[k][i]));
    }
    // The same graph with one op for several: on the CPU the same bits (DeepNorm's unfused path
    // has one node more, so only equal to rounding there).
    if (std::string(position) != "deepnorm") CHECK((fused.weights == plain.weights && fused.losses == plain.losses));
    MESSAGE(what << " losses with fused blocks: " << fused.losses[0] << " ... " << fused.losses.back()
            << std::string(fused.weights == plain.weights && fused.losses == plain.losses ? " (bit-identical)" : ""));
  }
}

TEST_CASE("fused_kernels is read from the model table and written back") {
  const std::string base = "[experiment]\nname = \"f\"\n[data.synthetic]\ntrain_pairs = 10\n[model]\n";
  CHECK(parse_experiment(base, "f.toml").model.fused_kernels);
  const ExperimentConfig off = parse_experiment(base + "fused_kernels = false\n", "f.toml");
  CHECK_FALSE(off.model.fused_kernels);
  CHECK(to_toml(off).find("fused_kernels = false") != std::string::npos);
  CHECK_FALSE(parse_experiment(to_toml(off), "f.toml").model.fused_kernels);
}
