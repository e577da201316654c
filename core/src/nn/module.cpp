#include "attnlab/module.h"

namespace attnlab {

Tensor Module::register_parameter(std::string name, Tensor value) {
  ATTNLAB_CHECK(value.defined(), "register_parameter('{}'): the tensor is undefined", name);
  for (const auto& [existing, _] : params_)
    ATTNLAB_CHECK(existing != name, "register_parameter: '{}' is already a parameter", name);
  if (!value.requires_grad()) value.set_requires_grad(true);
  params_.emplace_back(std::move(name), value);
  return value;
}

void Module::collect(const std::string& prefix,
                     std::vector<std::pair<std::string, Tensor>>& out) const {
  for (const auto& [name, p] : params_) out.emplace_back(prefix + name, p);
  for (const auto& [name, child] : children_)
    if (child) child->collect(prefix + name + ".", out);
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect("", out);
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [_, p] : named_parameters()) out.push_back(p);
  return out;
}

std::int64_t Module::parameter_count() const {
  std::int64_t n = 0;
  for (auto& [_, p] : named_parameters()) n += p.numel();
  return n;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [_, child] : children_)
    if (child) child->train(on);
}

void Module::zero_grad() {
  for (auto& [_, p] : named_parameters()) p.zero_grad();
}

}  // namespace attnlab
