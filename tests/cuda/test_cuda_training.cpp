// Whole training on cuda:0 against the CPU: one full step of a small Transformer in f32 (loss,
// every parameter's gradient, the weights after Adam), and the loss curves of a small model over
// 300 steps, GPU bf16 (and tf32) against CPU fp32, and flash with ALiBi and relative positions
// against scaled_dot in bf16. Skipped without a CUDA device, except the check that the flash
// test's model is one flash serves on CUDA.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "attnlab/attnlab.h"
#include "attnlab/nmt/train/optimizer.h"
#include "attnlab/nmt/model/transformer.h"
#include "attnlab/precision.h"
#include "copy_task.h"
#include "nmt_testing.h"
#include "support/cuda_testing.h"
#include "support/tensor_testing.h"

using namespace attnlab;
using namespace attnlab::nmt;

namespace {

const Device kGpu = Device::cuda(0);

using Batch = nmt::testing::PaddedBatch;

// The label-smoothed loss per target token of one forward pass on `device`.
Tensor step_loss(Transformer& model, const Batch& batch, Device device, std::int64_t vocab) {
  Tensor logits = model.forward(batch.src.to(device), batch.tgt_in.to(device)).reshape({-1, vocab});
  auto ce = cross_entropy(logits, batch.tgt_out.reshape({-1}).to(device), 0.1, 0);
  return scale(ce.loss_sum, 1.0 / ce.tokens.item());
}

}  // namespace

TEST_CASE("cuda full training step of a small transformer matches the cpu in f32") {
  SKIP_WITHOUT_CUDA();
  TransformerConfig c = nmt::testing::tiny_config(40);
  c.encoder_layers = 2;
  c.decoder_layers = 2;
  c.dims = {.d_model = 32, .n_heads = 4, .d_k = 8, .d_v = 8, .d_ff = 64, .max_length = 32};
  // Dropout as in training: Philox masks are the same on both devices.
  c.dropout = {.residual = 0.1, .embedding = 0.1, .attention = 0.1, .ffn = 0.0};
  Generator init_cpu(5), drop_cpu(6), init_gpu(5), drop_gpu(6);
  Transformer cpu(c, nmt::testing::plugins(), init_cpu, drop_cpu, DType::f32, Device::cpu());
  Transformer gpu(c, nmt::testing::plugins(), init_gpu, drop_gpu, DType::f32, kGpu);
  cpu.train();
  gpu.train();
  // eps 1e-4 keeps Adam's first update, lr g / (|g| + eps), a gentle function of the gradient.
  // With the paper's 1e-9 a gradient that is zero but for rounding (the attention key biases:
  // softmax ignores a shift of all scores) would move its weight by about lr, in a direction the
  // two devices' rounding decides.
  const AdamSettings adam{0.9, 0.98, 1e-4};
  AdamOptimizer opt_cpu(cpu.named_parameters(), adam), opt_gpu(gpu.named_parameters(), adam);
  const Batch batch = nmt::testing::padded_batch(c.vocab_size);

  Tensor loss_cpu = step_loss(cpu, batch, Device::cpu(), c.vocab_size);
  Tensor loss_gpu = step_loss(gpu, batch, kGpu, c.vocab_size);
  CHECK(loss_gpu.item() == doctest::Approx(loss_cpu.item()).epsilon(1e-5));
  loss_cpu.backward();
  loss_gpu.backward();

  const auto p_cpu = cpu.named_parameters(), p_gpu = gpu.named_parameters();
  REQUIRE(p_cpu.size() == p_gpu.size());
  // f32 sums in another order: a few units in the last place of the largest terms.
  const attnlab::testing::Tolerance grad_tol{2e-5, 1e-3};
  for (std::size_t i = 0; i < p_cpu.size(); ++i) {
    CAPTURE(p_cpu[i].first);
    REQUIRE(p_gpu[i].first == p_cpu[i].first);
    REQUIRE(p_cpu[i].second.grad().defined());
    REQUIRE(p_gpu[i].second.grad().defined());
    CHECK(p_gpu[i].second.grad().device() == kGpu);
    CHECK_TENSOR_NEAR(p_gpu[i].second.grad().to(Device::cpu()), p_cpu[i].second.grad(), grad_tol);
  }

  const double lr = 1e-3;
  opt_cpu.step(lr);
  opt_gpu.step(lr);
  // Updates are lr-sized: the weights agree to a small fraction of lr.
  const attnlab::testing::Tolerance weight_tol{lr * 0.05, 1e-5};
  for (std::size_t i = 0; i < p_cpu.size(); ++i) {
    CAPTURE(p_cpu[i].first);
    CHECK_TENSOR_NEAR(p_gpu[i].second.to(Device::cpu()), p_cpu[i].second, weight_tol);
  }
  opt_cpu.zero_grad();
  opt_gpu.zero_grad();
  // The next forward pass (new dropout masks, updated weights) still agrees.
  CHECK(step_loss(gpu, batch, kGpu, c.vocab_size).item() ==
        doctest::Approx(step_loss(cpu, batch, Device::cpu(), c.vocab_size).item()).epsilon(1e-4));
}

TEST_CASE("cuda loss curves of 300 steps in bf16 and tf32 agree with the cpu in fp32") {
  SKIP_WITHOUT_CUDA();
  // The tolerance is the one the CPU itself needs between its bf16 and fp32 runs of the same
  // model (check_loss_curve_follows, tests/nmt/copy_task.h): 0.1 nats plus 10 % of the loss over every window of 10
  // steps. bf16 operands carry 8 significant bits, so the curves drift apart a little and then
  // follow each other; GPU bf16 and CPU bf16 do the same arithmetic up to the order of the sums.
  nmt::testing::CopyTaskRun run;
  run.steps = 300;
  run.dropout = 0.1;
  const std::vector<double> cpu = nmt::testing::train_copy_task(run);
  run.device = kGpu;
  for (Precision p : {Precision::bf16, Precision::tf32, Precision::fp32}) {
    CAPTURE(precision_name(p));
    run.precision = p;
    const std::vector<double> gpu = nmt::testing::train_copy_task(run);
    REQUIRE(gpu.size() == cpu.size());
    using nmt::testing::mean_of;
    MESSAGE("copy task, last 10 steps: cpu fp32 " << mean_of(cpu, 290, 300) << ", cuda " << precision_name(p) << " "
                                                  << mean_of(gpu, 290, 300));
    CHECK(mean_of(gpu, 290, 300) < 0.5 * mean_of(gpu, 0, 10));
    nmt::testing::check_loss_curve_follows(cpu, gpu);
  }
}

namespace {

// The copy task of the flash curve test: two heads of 16 (flash's smallest head size on CUDA).
nmt::testing::CopyTaskRun flash_curve_run(const char* positional) {
  return {.device = kGpu, .precision = Precision::bf16, .steps = 300, .heads = 2, .dropout = 0.1,
          .positional = positional};
}

}  // namespace

TEST_CASE("the flash curve test's models are ones flash serves on cuda, with no fallback") {
  // Needs no device: the plugins' declared capabilities decide, as when the model is built.
  for (const char* positional : {"alibi", "relative"}) {
    CAPTURE(positional);
    TransformerConfig c = nmt::testing::copy_task_config(flash_curve_run(positional));
    c.attention.name = "flash";
    const nmt::AttentionResolution r = nmt::resolve_attention(c, nmt::testing::plugins(), kGpu, DType::f32);
    CHECK(r.choice.name == "flash");
    CHECK(r.notice.empty());
  }
}

TEST_CASE("cuda loss curves of flash with alibi and relative positions follow scaled_dot in bf16") {
  SKIP_WITHOUT_CUDA();
  // Both on cuda:0 in bf16 (flash's terms on its FMA kernels, scaled_dot's through core ops): the
  // same window as against the CPU above.
  for (const char* positional : {"alibi", "relative"}) {
    CAPTURE(positional);
    const nmt::testing::CopyTaskRun run = flash_curve_run(positional);
    const auto [reference, fused] = nmt::testing::train_copy_task_twice(run, "flash");
    using nmt::testing::mean_of;
    MESSAGE("copy task with " << positional << ", last 10 steps: scaled_dot " << mean_of(reference, 290, 300)
                              << ", flash " << mean_of(fused, 290, 300));
    CHECK(mean_of(fused, 290, 300) < 0.5 * mean_of(fused, 0, 10));
    nmt::testing::check_loss_curve_follows(reference, fused);
  }
}
