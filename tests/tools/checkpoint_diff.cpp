// checkpoint_diff A.safetensors B.safetensors [--tolerance X]: compares the training state of two
// checkpoints (step, data position, every parameter and both Adam moments) and prints the largest
// element difference. Exit 0 when every difference is at most X (default 0: bit-identical), 1
// otherwise, 2 on bad usage. Used by the CLI tests of data-parallel training.
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "attnlab/nmt/checkpoint/checkpoint.h"

namespace {

using attnlab::nmt::NamedTensor;

struct Diff {
  std::size_t tensors = 0, elements = 0, differing = 0;
  double max_abs = 0.0;
  std::string worst;
};

void compare(const std::string& what, const std::vector<NamedTensor>& a, const std::vector<NamedTensor>& b, Diff& d) {
  if (a.size() != b.size()) throw std::runtime_error(fmt::format("{}: {} vs {} tensors", what, a.size(), b.size()));
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].name != b[i].name || a[i].tensor.shape() != b[i].tensor.shape())
      throw std::runtime_error(fmt::format("{}: {} {} vs {} {}", what, a[i].name, a[i].tensor.str(), b[i].name,
                                           b[i].tensor.str()));
    const std::vector<double> x = a[i].tensor.to_vector<double>(), y = b[i].tensor.to_vector<double>();
    ++d.tensors;
    for (std::size_t k = 0; k < x.size(); ++k) {
      const double diff = std::fabs(x[k] - y[k]);
      ++d.elements;
      if (x[k] != y[k]) ++d.differing;
      if (diff > d.max_abs) d.max_abs = diff, d.worst = fmt::format("{} {}[{}]", what, a[i].name, k);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && !(argc == 5 && std::string(argv[3]) == "--tolerance")) {
    std::fputs("usage: checkpoint_diff A.safetensors B.safetensors [--tolerance X]\n", stderr);
    return 2;
  }
  try {
    const double tolerance = argc == 5 ? std::stod(argv[4]) : 0.0;
    const auto a = attnlab::nmt::load_checkpoint(argv[1]);
    const auto b = attnlab::nmt::load_checkpoint(argv[2]);
    if (a.step != b.step || a.data.epoch != b.data.epoch || a.data.batch_index != b.data.batch_index) {
      fmt::print("different positions: step {} (epoch {}, batch {}) vs step {} (epoch {}, batch {})\n", a.step,
                 a.data.epoch, a.data.batch_index, b.step, b.data.epoch, b.data.batch_index);
      return 1;
    }
    Diff d;
    compare("parameter", a.parameters, b.parameters, d);
    compare("adam m", a.optimizer.m, b.optimizer.m, d);
    compare("adam v", a.optimizer.v, b.optimizer.v, d);
    fmt::print("step {}: {} tensors, {} elements, {} differ, largest |difference| {:.3g}{}{}\n", a.step, d.tensors,
               d.elements, d.differing, d.max_abs, d.worst.empty() ? "" : " at ", d.worst);
    return d.max_abs <= tolerance ? 0 : 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "checkpoint_diff: {}\n", e.what());
    return 2;
  }
}
