#include "attnlab/nmt/train/optimizer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "attnlab/autograd.h"
#include "attnlab/ops.h"
#include "attnlab/ops/adam.h"

namespace attnlab::nmt {

double transformer_lr(std::int64_t step, std::int64_t d_model, std::int64_t warmup_steps, double scale) {
  ATTNLAB_CHECK(step >= 1 && d_model > 0 && warmup_steps > 0,
                "transformer_lr: step {} >= 1, d_model {} and warmup {} > 0 required", step, d_model, warmup_steps);
  const double s = static_cast<double>(step);
  return scale / std::sqrt(static_cast<double>(d_model)) *
         std::min(1.0 / std::sqrt(s), s * std::pow(static_cast<double>(warmup_steps), -1.5));
}

std::vector<bool> weight_decay_mask(const NamedTensors& parameters, const std::vector<std::string>& exclude) {
  std::vector<bool> mask;
  for (const auto& entry : parameters) {
    const std::string& name = entry.first;
    const bool excluded = std::any_of(exclude.begin(), exclude.end(),
                                      [&](const std::string& part) { return name.find(part) != std::string::npos; });
    mask.push_back(entry.second.rank() >= 2 && !excluded);
  }
  return mask;
}

Tensor gradient_squares(const NamedTensors& parameters) {
  NoGradGuard no_grad;
  // Sums of squares per device, accumulated there in f32 or f64, then moved to the first one's.
  std::vector<Tensor> totals;
  for (const auto& [_, p] : parameters) {
    Tensor g = p.grad();
    if (!g.defined() || g.numel() == 0) continue;
    if (g.dtype() != DType::f64) g = g.to(DType::f32);
    Tensor s = sum(mul(g, g)).to(DType::f64);
    auto it = std::find_if(totals.begin(), totals.end(), [&](const Tensor& t) { return t.device() == s.device(); });
    if (it == totals.end()) totals.push_back(s);
    else *it = add(*it, s);
  }
  const Device home = parameters.empty() ? Device::cpu() : parameters.front().second.device();
  Tensor squares;
  for (const Tensor& t : totals) squares = squares.defined() ? add(squares, t.to(home)) : t.to(home);
  return squares.defined() ? squares : Tensor::zeros(Shape{}, DType::f64, home);
}

double gradient_norm(const NamedTensors& parameters) { return std::sqrt(gradient_squares(parameters).item()); }

double clip_factor(double norm, double max_norm) {
  if (max_norm <= 0) return 1.0;
  return std::min(1.0, max_norm / (norm + 1e-6));
}

AdamOptimizer::AdamOptimizer(Named parameters, AdamSettings settings, std::vector<bool> decayed)
    : params_(std::move(parameters)), settings_(settings), decayed_(std::move(decayed)) {
  ATTNLAB_CHECK(settings_.weight_decay >= 0, "optimizer: weight_decay must be >= 0, got {}", settings_.weight_decay);
  if (decayed_.empty()) decayed_.assign(params_.size(), false);
  ATTNLAB_CHECK(decayed_.size() == params_.size(), "optimizer: {} weight-decay flags for {} parameters",
                decayed_.size(), params_.size());
  for (const auto& [name, p] : params_) {
    m_.emplace_back(name, Tensor::zeros_like(p));
    v_.emplace_back(name, Tensor::zeros_like(p));
  }
}

void AdamOptimizer::step(double lr, double grad_scale, const Tensor& grad_scale_tensor) {
  ++steps_;
  // One multi-tensor step per (device, dtype, decayed or not) of the parameters that have a
  // gradient (a model usually has one or two such groups): the same update as adam_step on each,
  // in far fewer passes.
  struct Group {
    Device device;
    DType dtype;
    bool decayed;
    std::vector<Tensor> p, g, m, v, copies;
  };
  std::vector<Group> groups;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i].second;
    Tensor g = p.grad();
    if (!g.defined()) continue;
    const bool decayed = decayed_[i] && settings_.weight_decay > 0;
    auto it = std::find_if(groups.begin(), groups.end(), [&](const Group& gr) {
      return gr.device == p.device() && gr.dtype == p.dtype() && gr.decayed == decayed;
    });
    if (it == groups.end()) it = groups.insert(groups.end(), Group{p.device(), p.dtype(), decayed, {}, {}, {}, {}, {}});
    it->p.push_back(p);
    it->g.push_back(std::move(g));
    it->m.push_back(m_[i].second);
    it->v.push_back(v_[i].second);
    it->copies.push_back(bf16_copies_.empty() ? Tensor() : bf16_copies_[i]);
  }
  for (const Group& gr : groups) {
    const AdamHyper hyper{.lr = lr,
                          .beta1 = settings_.beta1,
                          .beta2 = settings_.beta2,
                          .eps = settings_.eps,
                          .step = steps_,
                          .weight_decay = gr.decayed ? settings_.weight_decay : 0.0,
                          .grad_scale = grad_scale,
                          .grad_scale_tensor = grad_scale_tensor.defined() ? grad_scale_tensor.to(gr.device)
                                                                           : Tensor()};
    adam_step_multi(gr.p, gr.g, gr.m, gr.v, hyper, gr.copies);
  }
  // Every kept copy of a parameter the step updated now holds its value.
  for (std::size_t i = 0; i < bf16_copies_.size(); ++i)
    if (bf16_copies_[i].defined() && params_[i].second.grad().defined()) bf16_written_[i] = true;
}

void AdamOptimizer::keep_bf16_copies(bool on) {
  bf16_copies_.clear();
  bf16_written_.clear();
  if (!on) return;
  for (const auto& [_, p] : params_) {
    const bool matrix = p.rank() >= 2 && p.dtype() == DType::f32;
    bf16_copies_.push_back(matrix ? Tensor::empty(p.shape(), DType::bf16, p.device()) : Tensor());
  }
  bf16_written_.assign(params_.size(), false);
}

void AdamOptimizer::provide_bf16_copies(Bf16Operands& operands) const {
  for (std::size_t i = 0; i < bf16_copies_.size(); ++i)
    if (bf16_written_[i]) operands.provide(params_[i].second, bf16_copies_[i]);
}

void AdamOptimizer::forget_bf16_copies() { bf16_written_.assign(bf16_written_.size(), false); }

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
  forget_bf16_copies();  // a restored state comes with restored parameters
}

}  // namespace attnlab::nmt
