#include "copy_task.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>

#include "attnlab/nmt/train/optimizer.h"
#include "attnlab/nmt/model/transformer.h"
#include "attnlab/ops.h"
#include "nmt_testing.h"

namespace attnlab::nmt::testing {

namespace {

// The share of rows of logits [n, vocab] whose largest entry is at the target's index.
double token_accuracy(const Tensor& logits, const std::vector<std::int64_t>& targets) {
  const std::vector<float> v = logits.to(Device::cpu()).to(DType::f32).to_vector<float>();
  const std::size_t vocab = v.size() / targets.size();
  std::size_t right = 0;
  for (std::size_t row = 0; row < targets.size(); ++row) {
    const auto first = v.begin() + static_cast<std::ptrdiff_t>(row * vocab);
    right += std::max_element(first, first + static_cast<std::ptrdiff_t>(vocab)) - first == targets[row];
  }
  return static_cast<double>(right) / static_cast<double>(targets.size());
}

}  // namespace

std::vector<double> train_copy_task(const CopyTaskRun& run) { return train_copy_task_curves(run).loss; }

AttentionCurves train_copy_task_twice(CopyTaskRun run, const std::string& attention) {
  AttentionCurves c;
  c.reference = train_copy_task(run);
  run.attention = attention;
  c.other = train_copy_task(run);
  return c;
}

TransformerConfig copy_task_config(const CopyTaskRun& run) {
  TransformerConfig c = tiny_config(12);
  const std::int64_t d_head = 32 / run.heads;
  c.dims = {.d_model = 32, .n_heads = run.heads, .d_k = d_head, .d_v = d_head, .d_ff = 64, .max_length = 16};
  c.dropout = {.residual = run.dropout, .embedding = run.dropout, .attention = 0.0, .ffn = 0.0};
  c.attention.name = run.attention;
  c.positional.name = run.positional;
  c.positional.options = run.positional_options;
  return c;
}

CopyTaskCurves train_copy_task_curves(const CopyTaskRun& run) {
  const std::int64_t vocab = 12, bos = 2, eos = 3, len = run.len, batch = run.batch;
  const TransformerConfig c = copy_task_config(run);
  Generator init(run.init_seed), drop(run.dropout_seed);
  Transformer model(c, plugins(), init, drop, DType::f32, run.device);
  model.train();
  AdamOptimizer opt(model.named_parameters(), {});
  const PrecisionGuard precision(run.precision);
  std::mt19937_64 rng(run.data_seed);
  CopyTaskCurves curves;
  for (std::int64_t step = 1; step <= run.steps; ++step) {
    std::vector<std::int64_t> src(batch * len), tgt_in(batch * (len + 1)), tgt_out(batch * (len + 1));
    for (std::int64_t b = 0; b < batch; ++b) {
      tgt_in[b * (len + 1)] = bos;
      for (std::int64_t t = 0; t < len; ++t) {
        const auto w = static_cast<std::int64_t>(4 + rng() % 8);
        src[b * len + t] = w;
        tgt_in[b * (len + 1) + t + 1] = w;
        tgt_out[b * (len + 1) + t] = w;
      }
      tgt_out[b * (len + 1) + len] = eos;
    }
    Tensor logits = model.forward(Tensor::from_vector<std::int64_t>({batch, len}, src).to(run.device),
                                  Tensor::from_vector<std::int64_t>({batch, len + 1}, tgt_in).to(run.device));
    auto ce = cross_entropy(logits.reshape({-1, vocab}),
                            Tensor::from_vector<std::int64_t>({batch * (len + 1)}, tgt_out).to(run.device),
                            run.label_smoothing);
    Tensor mean_loss = scale(ce.loss_sum, 1.0 / static_cast<double>(batch * (len + 1)));
    mean_loss.backward();
    curves.loss.push_back(mean_loss.item());
    curves.accuracy.push_back(token_accuracy(logits, tgt_out));
    opt.step(transformer_lr(step, 32, run.warmup_steps, 1.0));
    opt.zero_grad();
  }
  return curves;
}

CopyTaskRun with_seed(CopyTaskRun run, int seed) {
  if (seed > 0) run.init_seed = run.dropout_seed = run.data_seed = 1000 + static_cast<std::uint64_t>(seed);
  return run;
}

std::vector<double> mean_loss_curve(const CopyTaskRun& run, int first_seed, int seeds) {
  std::vector<double> mean(static_cast<std::size_t>(run.steps), 0.0);
  for (int seed = first_seed; seed < first_seed + seeds; ++seed) {
    const std::vector<double> loss = train_copy_task(with_seed(run, seed));
    for (std::size_t i = 0; i < mean.size(); ++i) mean[i] += loss[i] / seeds;
  }
  return mean;
}

int training_repeats() {
  const char* text = std::getenv("ATTNLAB_TRAINING_REPEATS");
  if (text == nullptr || *text == '\0') return 1;
  const int repeats = std::atoi(text);
  REQUIRE_MESSAGE(repeats > 0, "ATTNLAB_TRAINING_REPEATS must be a positive number, not '" << text << "'");
  return repeats;
}

double mean_of(const std::vector<double>& values, std::size_t begin, std::size_t end) {
  double s = 0.0;
  for (std::size_t i = begin; i < end; ++i) s += values[i];
  return end > begin ? s / static_cast<double>(end - begin) : 0.0;
}

void check_loss_curve_follows(const std::vector<double>& reference, const std::vector<double>& got) {
  REQUIRE(got.size() == reference.size());
  REQUIRE_FALSE(got.empty());
  CHECK(got[0] == doctest::Approx(reference[0]).epsilon(0.01));
  double used = 0.0;  // the largest share of its allowance that one window takes
  for (std::size_t w = 0; w < reference.size(); w += 10) {
    CAPTURE(w);
    const double a = mean_of(reference, w, w + 10), b = mean_of(got, w, w + 10);
    CHECK(std::abs(b - a) <= 0.1 + 0.1 * a);
    used = std::max(used, std::abs(b - a) / (0.1 + 0.1 * a));
  }
  MESSAGE("loss curve follows its reference: the closest window takes " << used << " of its allowance");
}

}  // namespace attnlab::nmt::testing
