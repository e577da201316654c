// positional "alibi": attention with linear biases (Press et al. 2022). Nothing is added to the
// embeddings; every self-attention head n adds -m_n |i - j| to the score of query position i and
// key position j. For h a power of two the slopes are the geometric sequence m_n = 2^(-8n/h),
// n = 1..h; otherwise the paper's rule: the slopes of the nearest smaller power of two, then every
// other slope of the next power of two. |i - j| makes the bias symmetric for the encoder; under the
// decoder's causal mask only j <= i remain, as in the paper. No parameters.
#include <cmath>
#include <vector>

#include "attnlab/ops.h"
#include "attnlab/plugin/plugin_api.h"
#include "attnlab/plugin/registry.h"

namespace {

using namespace attnlab;

std::vector<double> power_of_two_slopes(std::int64_t n) {
  std::vector<double> s;
  for (std::int64_t k = 1; k <= n; ++k) s.push_back(std::pow(2.0, -8.0 * static_cast<double>(k) / n));
  return s;
}

std::vector<double> alibi_slopes(std::int64_t heads) {
  std::int64_t p = 1;
  while (p * 2 <= heads) p *= 2;
  std::vector<double> s = power_of_two_slopes(p);
  const std::vector<double> finer = power_of_two_slopes(2 * p);
  for (std::size_t k = 0; static_cast<std::int64_t>(s.size()) < heads; k += 2) s.push_back(finer[k]);
  return s;
}

class LinearBiases final : public AttentionPositions {
 public:
  explicit LinearBiases(std::int64_t heads)
      : slopes_(alibi_slopes(heads)), host_(Tensor::from_vector<double>({heads}, slopes_)) {}

  // The distance bias with each head's slope m_n, in kernel form (kernel_terms.h): the slopes as
  // [h] on q's device, in the dtype its kernels read (f64 on the CPU, f32 on CUDA), made once per
  // device.
  KernelScoreTerms kernel_score_terms(const Tensor& q, std::int64_t, std::int64_t) const override {
    check_heads(q);
    if (!on_device_.defined() || on_device_.device() != q.device()) {
      const DType dtype = q.device().is_cpu() ? DType::f64 : DType::f32;
      on_device_ = Tensor::from_vector<double>({heads()}, slopes_).to(dtype).to(q.device());
    }
    return {.slopes = on_device_};
  }

  // Its expansion, -m_n |q_offset + i - j| as [1, h, Tq, keys], from the slopes on the host (the
  // default expansion would read them back from the device).
  Tensor score_terms(const Tensor& q, std::int64_t q_offset, std::int64_t keys) const override {
    check_heads(q);
    return expand_score_terms({.slopes = host_}, q, q_offset, keys);
  }

 private:
  std::int64_t heads() const { return static_cast<std::int64_t>(slopes_.size()); }
  void check_heads(const Tensor& q) const {
    ATTNLAB_CHECK(q.rank() == 4 && q.dim(1) == heads(),
                  "positional alibi: expected [batch, {} heads, length, d_k], got {}", heads(), q.shape().str());
  }

  std::vector<double> slopes_;
  Tensor host_;               // the slopes, f64 on the CPU
  mutable Tensor on_device_;  // the slopes on the device last asked for
};

class Alibi final : public PositionalEncoding {
 public:
  Tensor forward(const Tensor& x, std::int64_t) override { return x; }
  std::shared_ptr<AttentionPositions> attention_positions(const BuildContext& ctx) const override {
    ATTNLAB_CHECK(ctx.dims.n_heads > 0, "positional alibi: n_heads must be positive, got {}", ctx.dims.n_heads);
    return std::make_shared<LinearBiases>(ctx.dims.n_heads);
  }
};

void register_plugins(Registry& registry) {
  registry.add_positional(
      {.name = "alibi",
       .version = "1.0.0",
       .description = "a per-head linear bias -m |i - j| on the self-attention scores (Press et al. 2022)",
       .positions = {.score_terms = true, .kernel_form = true}},
      [](const BuildContext&) { return std::make_shared<Alibi>(); });
}

}  // namespace

ATTNLAB_PLUGIN("alibi", "1.0.0", "attention with linear biases", register_plugins)
