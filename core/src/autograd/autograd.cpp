#include "attnlab/autograd.h"

#include <chrono>
#include <unordered_map>

#include <fmt/format.h>

#include "attnlab/device.h"
#include "attnlab/ops/binary.h"
#include "attnlab/profile.h"

namespace attnlab {
namespace {

thread_local bool g_grad_enabled = true;

// The profiler's timing (attnlab/profile.h): the device drained before and after.
using Clock = std::chrono::steady_clock;
Clock::time_point profile_start(Device device) {
  synchronize(device);
  return Clock::now();
}
void profile_stop(std::string_view op, Device device, Clock::time_point started) {
  synchronize(device);
  profile::add(fmt::format("bwd {}", op), std::chrono::duration<double>(Clock::now() - started).count());
}

// The sink of a leaf tensor: adds the incoming gradient into its grad().
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(std::shared_ptr<TensorImpl> leaf) : leaf_(std::move(leaf)) {}
  std::vector<Tensor> backward(std::vector<Tensor>& grads) override {
    Tensor& g = grads[0];
    if (g.defined()) {
      Tensor& acc = leaf_->grad;
      acc = acc.defined() ? add(acc, g) : g.detach();
    }
    return {};
  }
  std::string_view name() const override { return "AccumulateGrad"; }
  bool single_use() const override { return false; }

 private:
  std::shared_ptr<TensorImpl> leaf_;
};

Edge edge_for(const Tensor& t) {
  if (!t.defined() || !t.requires_grad()) return {};
  if (t.grad_fn()) return {t.grad_fn(), t.output_nr()};
  TensorImpl* impl = t.impl();
  auto acc = impl->grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t.impl_ptr());
    acc->output_shapes = {t.shape()};
    acc->output_dtypes = {t.dtype()};
    acc->device = t.device();
    impl->grad_accumulator = acc;
  }
  return {acc, 0};
}

}  // namespace

bool grad_enabled() { return g_grad_enabled; }
NoGradGuard::NoGradGuard() : previous_(g_grad_enabled) { g_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { g_grad_enabled = previous_; }

bool any_requires_grad(std::initializer_list<const Tensor*> inputs) {
  if (!g_grad_enabled) return false;
  for (const Tensor* t : inputs)
    if (t->requires_grad()) return true;
  return false;
}

bool any_requires_grad(const std::vector<Tensor>& inputs) {
  if (!g_grad_enabled) return false;
  for (const Tensor& t : inputs)
    if (t.requires_grad()) return true;
  return false;
}

void record(const std::shared_ptr<Node>& node, const std::vector<const Tensor*>& inputs,
            const std::vector<Tensor*>& outputs) {
  node->next.clear();
  for (const Tensor* in : inputs) node->next.push_back(edge_for(*in));
  node->num_outputs = static_cast<int>(outputs.size());
  node->output_shapes.clear();
  node->output_dtypes.clear();
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    outputs[i]->set_history(node, static_cast<int>(i));
    node->output_shapes.push_back(outputs[i]->shape());
    node->output_dtypes.push_back(outputs[i]->dtype());
  }
  if (!outputs.empty()) node->device = outputs[0]->device();
  if (profile::marked()) {
    synchronize(node->device);
    profile::forward_op(node->name());
  }
}

void run_backward(const Tensor& root) {
  ATTNLAB_CHECK(root.defined(), "backward() on an undefined tensor");
  ATTNLAB_CHECK(root.numel() == 1, "backward() needs a one-element (scalar) tensor, got {}",
                root.str());
  run_backward(root, Tensor::full(root.shape(), 1.0, root.dtype(), root.device()));
}

void run_backward(const Tensor& root, const Tensor& seed) {
  ATTNLAB_CHECK(root.defined() && seed.defined(), "backward() on an undefined tensor");
  ATTNLAB_CHECK(seed.shape() == root.shape() && seed.dtype() == root.dtype() &&
                    seed.device() == root.device(),
                "backward(): gradient {} does not match tensor {}", seed.str(), root.str());
  ATTNLAB_CHECK(root.requires_grad(),
                "backward(): {} does not require grad (no input was a parameter, or it was computed "
                "under NoGradGuard)",
                root.str());
  NoGradGuard no_grad;
  Edge root_edge = edge_for(root);

  // Count, for every node reachable from the root, the edges that lead into it.
  std::unordered_map<Node*, int> pending;
  std::vector<Node*> stack{root_edge.node.get()};
  pending[root_edge.node.get()] = 0;
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    ATTNLAB_CHECK(!node->released,
                  "backward(): {} was already differentiated and its saved tensors freed; run the "
                  "forward pass again before a second backward()",
                  node->name());
    for (const Edge& e : node->next) {
      if (!e.node) continue;
      auto [it, inserted] = pending.try_emplace(e.node.get(), 0);
      ++it->second;
      if (inserted) stack.push_back(e.node.get());
    }
  }

  const bool profiling = profile::enabled();
  profile::unmark();
  // Kahn's order: a node runs once every consumer has delivered its gradient.
  std::unordered_map<Node*, std::vector<Tensor>> grads;
  grads[root_edge.node.get()].resize(static_cast<std::size_t>(root_edge.node->num_outputs));
  grads[root_edge.node.get()][static_cast<std::size_t>(root_edge.output_nr)] = seed;
  std::vector<Node*> ready{root_edge.node.get()};
  while (!ready.empty()) {
    Node* node = ready.back();
    ready.pop_back();
    std::vector<Tensor> node_grads = std::move(grads[node]);
    grads.erase(node);
    node_grads.resize(static_cast<std::size_t>(node->num_outputs));
    const auto started = profiling ? profile_start(node->device) : Clock::time_point();
    std::vector<Tensor> input_grads = node->backward(node_grads);
    if (profiling) profile_stop(node->name(), node->device, started);
    node->release();
    node->released = node->single_use();
    node_grads.clear();  // the outputs' gradients are no longer needed

    for (std::size_t i = 0; i < node->next.size(); ++i) {
      const Edge& e = node->next[i];
      if (!e.node) continue;
      Node* target = e.node.get();
      if (i < input_grads.size() && input_grads[i].defined()) {
        Tensor& g = input_grads[i];
        const Shape& want = target->output_shapes[static_cast<std::size_t>(e.output_nr)];
        ATTNLAB_CHECK(g.shape() == want,
                      "backward of {} returned a gradient of shape {} for input {} of shape {}",
                      node->name(), g.shape().str(), i, want.str());
        auto& slots = grads[target];
        slots.resize(static_cast<std::size_t>(target->num_outputs));
        Tensor& slot = slots[static_cast<std::size_t>(e.output_nr)];
        if (!slot.defined()) {
          slot = g;
        } else {
          const auto summed = profiling ? profile_start(g.device()) : Clock::time_point();
          slot = add(slot, g);
          if (profiling) profile_stop("(gradient accumulation)", g.device(), summed);
        }
      }
      if (--pending[target] == 0) ready.push_back(target);
    }
  }
}

}  // namespace attnlab
