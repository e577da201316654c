#pragma once
// The shape the structured dropout plugins share: a plugin that drops in its own way at one site
// (whole heads at the attention weights, whole tokens at the embeddings) and is the standard
// element-wise inverted dropout at every other site.
#include <string>
#include <string_view>

#include "attnlab/ops/dropout.h"
#include "attnlab/plugin/context.h"
#include "attnlab/plugin/dropout.h"

namespace attnlab::dropout_common {

class SiteDropout : public Dropout {
 public:
  // Identity in evaluation mode or at rate 0; drop_at_site at the plugin's site; standard dropout
  // elsewhere.
  Tensor forward(const Tensor& x) final {
    if (!training() || rate_ == 0.0) return x;
    ATTNLAB_CHECK(rng_ != nullptr, "dropout {}: training with rate {} needs the context's dropout_rng", plugin_, rate_);
    return site_ == own_site_ ? drop_at_site(x, *rng_) : dropout(x, rate_, *rng_);
  }
  double rate() const final { return rate_; }

 protected:
  // Errors name the plugin `plugin`; `own_site` is where drop_at_site applies.
  SiteDropout(std::string_view plugin, const BuildContext& ctx, DropoutSite own_site)
      : plugin_(plugin), rate_(ctx.options.get_real("rate")), site_(ctx.dropout_site), own_site_(own_site),
        rng_(ctx.dropout_rng) {
    ATTNLAB_CHECK(rate_ >= 0.0 && rate_ < 1.0, "dropout {}: rate must be in [0, 1), got {}", plugin_, rate_);
  }
  // x at the plugin's site, in training at a rate above 0.
  virtual Tensor drop_at_site(const Tensor& x, Generator& rng) = 0;

  std::string plugin_;
  double rate_;

 private:
  DropoutSite site_, own_site_;
  Generator* rng_;
};

}  // namespace attnlab::dropout_common
