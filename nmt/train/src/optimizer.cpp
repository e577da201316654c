#include "attnlab/nmt/train/optimizer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "attnlab/ops/adam.h"

namespace attnlab::nmt {

double transformer_lr(std::int64_t step, std::int64_t d_model, std::int64_t warmup_steps, double scale) {
  ATTNLAB_CHECK(step >= 1 && d_model > 0 && warmup_steps > 0,
                "transformer_lr: step {} >= 1, d_model {} and warmup {} > 0 required", step, d_model, warmup_steps);
  const double s = static_cast<double>(step);
  return scale / std::sqrt(static_cast<double>(d_model)) *
         std::min(1.0 / std::sqrt(s), s * std::pow(static_cast<double>(warmup_steps), -1.5));
}

AdamOptimizer::AdamOptimizer(Named parameters, AdamSettings settings)
    : params_(std::move(parameters)), settings_(settings) {
  for (const auto& [name, p] : params_) {
    m_.emplace_back(name, Tensor::zeros_like(p));
    v_.emplace_back(name, Tensor::zeros_like(p));
  }
}

void AdamOptimizer::step(double lr) {
  ++steps_;
  const AdamHyper hyper{lr, settings_.beta1, settings_.beta2, settings_.eps, steps_};
  // One multi-tensor step per (device, dtype) of the parameters that have a gradient (a model
  // usually has one such group): the same update as adam_step on each, in far fewer passes.
  struct Group {
    Device device;
    DType dtype;
    std::vector<Tensor> p, g, m, v;
  };
  std::vector<Group> groups;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i].second;
    Tensor g = p.grad();
    if (!g.defined()) continue;
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const Group& gr) { return gr.device == p.device() && gr.dtype == p.dtype(); });
    if (it == groups.end()) it = groups.insert(groups.end(), Group{p.device(), p.dtype(), {}, {}, {}, {}});
    it->p.push_back(p);
    it->g.push_back(std::move(g));
    it->m.push_back(m_[i].second);
    it->v.push_back(v_[i].second);
  }
  for (const Group& gr : groups) adam_step_multi(gr.p, gr.g, gr.m, gr.v, hyper);
}

void AdamOptimizer::zero_grad() {
  for (auto& [_, p] : params_) p.zero_grad();
}

void AdamOptimizer::load_state(const Named& m, const Named& v, std::int64_t steps) {
  ATTNLAB_CHECK(m.size() == params_.size() && v.size() == params_.size(),
                "optimizer state has {} / {} moments for {} parameters", m.size(), v.size(), params_.size());
  for (std::size_t i = 0; i < params_.size(); ++i) {
    for (const Named* side : {&m, &v}) {
      const auto& [name, t] = (*side)[i];
      ATTNLAB_CHECK(name == params_[i].first && t.shape() == params_[i].second.shape(),
                    "optimizer state entry {} '{}' {} does not match parameter '{}' {}", i, name, t.shape().str(),
                    params_[i].first, params_[i].second.shape().str());
    }
  }
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const Device dev = params_[i].second.device();
    const DType dt = params_[i].second.dtype();
    m_[i].second = m[i].second.to(dt).to(dev).clone();
    v_[i].second = v[i].second.to(dt).to(dev).clone();
  }
  steps_ = steps;
}

}  // namespace attnlab::nmt
