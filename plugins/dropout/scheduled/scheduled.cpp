// dropout "scheduled": inverted element-wise dropout whose rate follows the training step,
//   rate(s) = rate * (initial + (final - initial) * min(s / steps, 1)),
// a linear ramp of the site's rate from `initial` to `final` times it over `steps` optimizer
// steps. initial 0, final 1 is curriculum dropout (Morerio et al. 2017: the rate rises from
// zero); initial 1, final 0 is early dropout (Liu et al. 2023: only at the start). The step is the
// model's (BuildContext::training_step), restored with a checkpoint, so a resumed run drops what
// the uninterrupted one did.
#include <algorithm>

#include "attnlab/ops/dropout.h"
#include "attnlab/plugin/plugin_api.h"
#include "attnlab/plugin/registry.h"

namespace {

using namespace attnlab;

class ScheduledDropout final : public Dropout {
 public:
  explicit ScheduledDropout(const BuildContext& ctx)
      : rate_(ctx.options.get_real("rate")), initial_(ctx.options.get_real("initial")),
        final_(ctx.options.get_real("final")), steps_(ctx.options.get_int("steps")), step_(ctx.training_step),
        rng_(ctx.dropout_rng) {
    ATTNLAB_CHECK(rate_ >= 0.0 && rate_ < 1.0, "dropout scheduled: rate must be in [0, 1), got {}", rate_);
    ATTNLAB_CHECK(initial_ >= 0.0 && final_ >= 0.0 && rate_ * std::max(initial_, final_) < 1.0,
                  "dropout scheduled: initial {} and final {} must be >= 0 and keep the rate {} times them below 1",
                  initial_, final_, rate_);
    ATTNLAB_CHECK(steps_ > 0, "dropout scheduled: steps must be positive, got {}", steps_);
  }

  Tensor forward(const Tensor& x) override {
    const double p = rate();
    if (!training() || p == 0.0) return x;
    ATTNLAB_CHECK(rng_ != nullptr, "dropout scheduled: training with rate {} needs the context's dropout_rng", p);
    return dropout(x, p, *rng_);
  }

  // The rate at the model's current step (step 0 outside a model).
  double rate() const override {
    const double s = step_ ? static_cast<double>(*step_) : 0.0;
    const double progress = std::min(s / static_cast<double>(steps_), 1.0);
    return rate_ * (initial_ + (final_ - initial_) * progress);
  }

 private:
  double rate_, initial_, final_;
  std::int64_t steps_;
  const std::int64_t* step_;
  Generator* rng_;
};

void register_plugins(Registry& registry) {
  registry.add_dropout(
      {.name = "scheduled", .version = "1.0.0",
       .description = "element-wise dropout whose rate ramps linearly with the training step (curriculum or "
                      "early dropout)",
       .options = {{"rate", OptionType::real, OptionValue(0.1), "the site's rate (set per site)"},
                   {"initial", OptionType::real, OptionValue(0.0), "fraction of the rate at step 0"},
                   {"final", OptionType::real, OptionValue(1.0), "fraction of the rate from `steps` on"},
                   {"steps", OptionType::integer, OptionValue(std::int64_t{4000}), "length of the ramp in steps"}}},
      [](const BuildContext& ctx) { return std::make_shared<ScheduledDropout>(ctx); });
}

}  // namespace

ATTNLAB_PLUGIN("scheduled", "1.0.0", "dropout with a scheduled rate", register_plugins)
