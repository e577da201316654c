// The host-wait counters of a CUDA device (host_waits in attnlab/device.h): what they count is
// what a training step must avoid, so each kind of operation is checked against them. Kernels and
// copies within the device and uploads add nothing; a download adds one download and one
// synchronisation; an explicit synchronize() adds one synchronisation. Then whole training steps
// of a small Transformer (batch upload, forward, loss, backward, gradient clipping, Adam), which
// must not wait at all: only reading the loss does. Skipped without a CUDA device.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "attnlab/attnlab.h"
#include "attnlab/nmt/model/transformer.h"
#include "attnlab/nmt/train/optimizer.h"
#include "attnlab/precision.h"
#include "nmt_testing.h"
#include "support/cuda_testing.h"

using namespace attnlab;
using namespace attnlab::nmt;

namespace {

const Device kGpu = Device::cuda(0);

}  // namespace

TEST_CASE("cuda host-wait counters: kernels add nothing, each download and wait adds one") {
  SKIP_WITHOUT_CUDA();
  Tensor x = Tensor::full({4096}, 1.5, DType::f32, kGpu);
  HostWaits before = host_waits(kGpu);
  Tensor y = add(scale(x, 2.0), x);  // kernels, queued only
  Tensor z = sum(y.clone());          // a copy within the device, a reduction
  const HostWaits after_kernels = host_waits(kGpu) - before;
  CHECK(after_kernels.synchronizations == 0);
  CHECK(after_kernels.downloads == 0);

  before = host_waits(kGpu);
  CHECK(z.item() == doctest::Approx(4096 * 4.5));  // one download, one wait behind it
  const HostWaits after_item = host_waits(kGpu) - before;
  CHECK(after_item.downloads == 1);
  CHECK(after_item.synchronizations == 1);

  before = host_waits(kGpu);
  std::vector<float> host(1 << 16, 2.0f);
  Tensor up = Tensor::from_vector<float>({1 << 16}, host).to(kGpu);  // an upload does not wait
  const HostWaits after_upload = host_waits(kGpu) - before;
  CHECK(after_upload.synchronizations == 0);
  CHECK(after_upload.downloads == 0);
  std::fill(host.begin(), host.end(), -1.0f);  // the upload took its own copy
  CHECK(up.to_vector<float>() == std::vector<float>(1 << 16, 2.0f));

  before = host_waits(kGpu);
  synchronize(kGpu);
  const HostWaits after_wait = host_waits(kGpu) - before;
  CHECK(after_wait.downloads == 0);
  CHECK(after_wait.synchronizations == 1);
}

TEST_CASE("cuda training steps of a small transformer wait for the device only where the loss is read") {
  SKIP_WITHOUT_CUDA();
  struct Variant {
    std::string attention;
    bool fused;
    Precision precision;
    double clip_norm;  // > 0: the gradients clipped to it (norm and factor on the device)
  };
  for (const Variant& v :
       {Variant{"scaled_dot", false, Precision::fp32, 0.0}, Variant{"scaled_dot", true, Precision::bf16, 0.0},
        Variant{"flash", true, Precision::bf16, 0.0}, Variant{"scaled_dot", true, Precision::bf16, 0.05}}) {
    CAPTURE(v.attention);
    CAPTURE(v.fused);
    CAPTURE(v.clip_norm);
    CAPTURE(precision_name(v.precision));
    TransformerConfig c = nmt::testing::tiny_config(50);
    // Head size 16: the smallest that flash's CUDA kernels take (else it would fall back).
    c.dims = {.d_model = 64, .n_heads = 4, .d_k = 16, .d_v = 16, .d_ff = 128, .max_length = 32};
    c.dropout = {.residual = 0.1, .embedding = 0.1, .attention = 0.1, .ffn = 0.0};
    c.attention = {v.attention, {}, "scaled_dot"};
    c.fused_kernels = v.fused;
    const PrecisionGuard precision(v.precision);
    Generator init(3), dropout_rng(4);
    Transformer model(c, nmt::testing::plugins(), init, dropout_rng, DType::f32, kGpu);
    CHECK(model.attention().choice.name == v.attention);  // no fallback
    model.train();
    AdamOptimizer optimizer(model.named_parameters(), {0.9, 0.98, 1e-9});
    // A host batch with padding (id 0) at the row ends, as the trainer builds them.
    const nmt::testing::PaddedBatch batch = nmt::testing::padded_batch(c.vocab_size);
    const auto tokens = static_cast<double>(batch.tokens);
    for (int step = 1; step <= 4; ++step) {
      CAPTURE(step);
      const HostWaits before = host_waits(kGpu);
      const Tensor logits = model.forward(batch.src.to(kGpu), batch.tgt_in.to(kGpu)).reshape({-1, c.vocab_size});
      const CrossEntropyResult ce = cross_entropy(logits, batch.tgt_out.reshape({-1}).to(kGpu), 0.1, 0);
      scale(ce.loss_sum, 1.0 / tokens).backward();
      GradientClip clip;
      if (v.clip_norm > 0) clip = gradient_clip(gradient_squares(model.named_parameters()), v.clip_norm);
      optimizer.step(1e-3, 1.0, clip.factor);
      optimizer.zero_grad();
      const HostWaits in_step = host_waits(kGpu) - before;
      CHECK(in_step.synchronizations == 0);
      CHECK(in_step.downloads == 0);
      const HostWaits before_read = host_waits(kGpu);
      const double loss = ce.loss_sum.item() / tokens;
      const HostWaits read = host_waits(kGpu) - before_read;
      CHECK(read.synchronizations == 1);
      CHECK(read.downloads == 1);
      CHECK(std::isfinite(loss));
      CHECK(ce.tokens.item() == tokens);  // the host's count, counted on the device
      if (v.clip_norm > 0) CHECK(clip.factor.item() < 1.0);  // clipping acted
    }
  }
}
