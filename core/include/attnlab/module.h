#pragma once
// Modules: objects that own named parameters and sub-modules, with a training/evaluation mode.
// Parameters are leaf tensors that require grad; names are dotted paths ("w_q.weight").
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "attnlab/tensor.h"

namespace attnlab {

class Module {
 public:
  virtual ~Module() = default;
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // Every parameter of this module and its sub-modules, in registration order.
  std::vector<std::pair<std::string, Tensor>> named_parameters() const;
  std::vector<Tensor> parameters() const;
  std::int64_t parameter_count() const;
  // Sets the mode of this module and every sub-module (dropout is active only in training).
  void train(bool on = true);
  void eval() { train(false); }
  bool training() const { return training_; }
  void zero_grad();

 protected:
  // Registers `value` as a parameter (marks it requires_grad); returns the stored tensor.
  Tensor register_parameter(std::string name, Tensor value);
  template <typename M>
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> module) {
    children_.emplace_back(std::move(name), module);
    return module;
  }

 private:
  void collect(const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& out) const;
  std::vector<std::pair<std::string, Tensor>> params_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

}  // namespace attnlab
