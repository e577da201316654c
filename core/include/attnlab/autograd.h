#pragma once
// Define-by-run reverse-mode autodiff. Each differentiable op records a Node whose backward()
// maps the gradients of its outputs to the gradients of its inputs. Tensor::backward() runs the
// recorded nodes in reverse topological order, frees each node's saved tensors as soon as it
// has run, and accumulates into leaf tensors' grad().
#include <memory>
#include <string_view>
#include <vector>

#include "attnlab/tensor.h"

namespace attnlab {

// Points at output `output_nr` of `node`.
struct Edge {
  std::shared_ptr<Node> node;
  int output_nr = 0;
};

class Node : public std::enable_shared_from_this<Node> {
 public:
  virtual ~Node() = default;
  // grads[i] is the gradient of output i; an undefined tensor means zero. Returns one gradient
  // per input edge (undefined where the input needs none). Runs in no-grad mode.
  virtual std::vector<Tensor> backward(std::vector<Tensor>& grads) = 0;
  // Frees saved tensors; called right after backward().
  virtual void release() {}
  virtual std::string_view name() const = 0;
  // False for nodes that outlive one graph (a leaf's gradient sink); they are never released.
  virtual bool single_use() const { return true; }

  std::vector<Edge> next;  // one per differentiable input, in the op's input order
  int num_outputs = 1;
  // Shapes of the outputs, so that a missing output gradient can be read as zeros.
  std::vector<Shape> output_shapes;
  std::vector<DType> output_dtypes;
  Device device;
  // Set once backward() has run and the saved tensors are gone; a second pass is an error.
  bool released = false;
};

// Gradient recording is on by default; NoGradGuard turns it off in a scope (evaluation).
bool grad_enabled();
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// True when recording is on and any of `inputs` requires grad.
bool any_requires_grad(std::initializer_list<const Tensor*> inputs);
bool any_requires_grad(const std::vector<Tensor>& inputs);

// Connects `node` to the tape: its edges point at `inputs` (undefined or non-grad inputs get an
// empty edge) and `outputs` record it as their grad_fn.
void record(const std::shared_ptr<Node>& node, const std::vector<const Tensor*>& inputs,
            const std::vector<Tensor*>& outputs);

// Convenience for the common single-output case.
template <typename NodeT>
void record(const std::shared_ptr<NodeT>& node, std::initializer_list<const Tensor*> inputs,
            Tensor& output) {
  record(std::static_pointer_cast<Node>(node), std::vector<const Tensor*>(inputs), {&output});
}

// Runs backward from `root` (one element) with seed gradient 1.
void run_backward(const Tensor& root);
// Runs backward from any `root` with the given gradient of the same shape (a vector-Jacobian
// product: every leaf receives grad^T d root / d leaf).
void run_backward(const Tensor& root, const Tensor& grad);

}  // namespace attnlab
