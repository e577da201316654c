// Dropout seeds read from a slot when the kernels run (attnlab/seed_slot.h, philox::SeedRef): the
// masks equal those of the seed by value, and work recorded once (as a captured CUDA graph
// replays it, with the arguments of its capture) draws the masks of whatever seed the slot holds
// when it runs. The CPU backend's slot is host memory; tests/cuda covers the device's.
#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "attnlab/attnlab.h"
#include "support/gradcheck.h"
#include "support/tensor_testing.h"

using namespace attnlab;
using testing::random_tensor;

namespace {

const Device kCpu = Device::cpu();

std::vector<double> values(const Tensor& t) { return t.to(DType::f64).to_vector<double>(); }

DropoutAddLayerNormInputs norm_inputs(std::uint64_t seed) {
  return {.x = random_tensor({5, 12}, seed, -2.0, 2.0, DType::f64),
          .bias = random_tensor({12}, seed + 1, -0.5, 0.5, DType::f64),
          .residual = random_tensor({5, 12}, seed + 2, -1.0, 1.0, DType::f64),
          .gamma = random_tensor({12}, seed + 3, 0.5, 1.5, DType::f64),
          .beta = random_tensor({12}, seed + 4, -0.5, 0.5, DType::f64)};
}

}  // namespace

TEST_CASE("a seed slot holds what was written, and a bound generator writes its seed there") {
  auto slot = std::make_shared<SeedSlot>(kCpu);
  CHECK(slot->read() == 0);
  slot->write(0xFEDCBA9876543210ull);  // all 64 bits survive
  CHECK(slot->read() == 0xFEDCBA9876543210ull);
  CHECK(*slot->address() == 0xFEDCBA9876543210ull);

  Generator g(5);
  CHECK(g.reserve(8).seed_slot == nullptr);  // unbound: draws carry the seed by value only
  g.bind_seed_slot(slot);
  CHECK(slot->read() == 5);  // binding writes the current seed
  g.set_state(9, 3);
  CHECK(slot->read() == 9);
  CHECK(g.seed() == 9);
  CHECK(g.offset() == 3);
  const Generator::Draw d = g.reserve(10);
  CHECK(d.seed == 9);
  CHECK(d.offset == 3);
  CHECK(g.offset() == 6);  // ceil(10 / 4) blocks, as without a slot
  CHECK(d.seed_slot == slot->address());
  CHECK(d.seed_on(kCpu).slot == slot->address());
  CHECK(d.seed_on(kCpu).get() == 9);
  // A slot on one device is not read by work on another: that work gets the seed by value.
  CHECK(d.seed_on(Device::cuda(0)).slot == nullptr);
  CHECK(d.seed_on(Device::cuda(0)).get() == 9);
  g.bind_seed_slot(nullptr);
  g.set_state(11, 0);
  CHECK(slot->read() == 9);  // unbound: no longer written
  CHECK(g.reserve(4).seed_slot == nullptr);
}

TEST_CASE("dropout with a seed slot draws the slot's seed when it runs, forward and backward") {
  SeedSlot slot(kCpu);
  slot.write(77);
  const philox::SeedRef ref{5, slot.address()};  // the value 5 is not what the kernels read
  const Tensor x0 = random_tensor({31, 17}, 3, 0.5, 1.5, DType::f64);
  Tensor x = x0.clone().set_requires_grad(), want_x = x0.clone().set_requires_grad();
  const Tensor y = dropout(x, 0.3, ref, 11), want = dropout(want_x, 0.3, 77, 11);
  CHECK(values(y) == values(want));
  CHECK(values(y) != values(dropout(x0, 0.3, 5, 11)));
  const Tensor dy = random_tensor({31, 17}, 4, -1.0, 1.0, DType::f64);
  want.backward(dy);
  // The backward's kernel reads the slot again when it runs: rewritten in between, it draws the
  // new seed's mask (a training step never rewrites it between a forward and its backward).
  slot.write(78);
  y.backward(dy);
  CHECK(values(x.grad()) == values(dropout(dy, 0.3, 78, 11)));
  CHECK(values(want_x.grad()) == values(dropout(dy, 0.3, 77, 11)));
  slot.write(77);
  CHECK_GRADCHECK([&](const std::vector<Tensor>& in) { return dropout(in[0], 0.4, ref, 2); },
                  {random_tensor({3, 7}, 21)});
}

TEST_CASE("dropout_add_layer_norm and dropout_add_norm_pair read the slot's seed") {
  SeedSlot slot(kCpu);
  slot.write(1234);
  const philox::SeedRef ref{1, slot.address()};
  const DropoutAddLayerNormInputs in = norm_inputs(40);
  CHECK(values(dropout_add_layer_norm(in, 0.3, ref, 5)) == values(dropout_add_layer_norm(in, 0.3, 1234, 5)));
  CHECK(values(dropout_add_layer_norm(in, 0.3, ref, 5)) != values(dropout_add_layer_norm(in, 0.3, 1, 5)));
  const DropoutAddNormPair got = dropout_add_norm_pair(in, 0.3, ref, 5);
  const DropoutAddNormPair want = dropout_add_norm_pair(in, 0.3, 1234, 5);
  CHECK(values(got.sum) == values(want.sum));
  CHECK(values(got.normed) == values(want.normed));
  CHECK_GRADCHECK(
      [&](const std::vector<Tensor>& t) {
        return dropout_add_layer_norm({.x = t[0], .bias = t[1], .residual = t[2], .gamma = t[3], .beta = t[4]}, 0.3,
                                      ref, 5);
      },
      {random_tensor({3, 6}, 31, -2.0, 2.0), random_tensor({6}, 32), random_tensor({3, 6}, 33),
       random_tensor({6}, 34, 0.5, 1.5), random_tensor({6}, 35)});
  CHECK_GRADCHECK(
      [&](const std::vector<Tensor>& t) {
        const DropoutAddNormPair pair = dropout_add_norm_pair({.x = t[0], .residual = t[1]}, 0.3, ref, 5);
        return add(pair.sum, scale(pair.normed, 0.5));
      },
      {random_tensor({3, 6}, 36, -2.0, 2.0), random_tensor({3, 6}, 37)});
}

TEST_CASE("work recorded once draws each batch's masks when the slot is rewritten before it runs") {
  // The emulation of a replayed graph: the draws (kernel arguments) are made once, at the first
  // batch; later batches only set the generator's state, which writes the slot, and run the
  // recorded work again. It must draw what a fresh eager pass of each batch draws.
  const Tensor x = random_tensor({9, 40}, 50, 0.5, 1.5, DType::f64);
  const DropoutAddLayerNormInputs in = norm_inputs(60);
  const double p = 0.25;
  using Outputs = std::pair<std::vector<double>, std::vector<double>>;
  const auto eager = [&](std::uint64_t seed) {
    Generator e(0);
    e.set_state(seed, 0);
    const Tensor a = dropout(x, p, e);
    return Outputs{values(a), values(dropout_add_layer_norm(in, p, e))};
  };

  Generator g(0);
  g.bind_seed_slot(std::make_shared<SeedSlot>(kCpu));
  g.set_state(101, 0);
  const Generator::Draw d1 = g.reserve(static_cast<std::uint64_t>(x.numel()));
  const Generator::Draw d2 = g.reserve(static_cast<std::uint64_t>(in.x.numel()));
  const auto recorded = [&](bool by_value) {
    const philox::SeedRef s1 = by_value ? philox::SeedRef{d1.seed, nullptr} : d1.seed_on(kCpu);
    const philox::SeedRef s2 = by_value ? philox::SeedRef{d2.seed, nullptr} : d2.seed_on(kCpu);
    return Outputs{values(dropout(x, p, s1, d1.offset)), values(dropout_add_layer_norm(in, p, s2, d2.offset))};
  };
  CHECK(recorded(false) == eager(101));
  for (std::uint64_t seed : {202u, 303u}) {
    CAPTURE(seed);
    g.set_state(seed, 0);
    CHECK(recorded(false) == eager(seed));
    // The seed by value, as a kernel argument frozen at the first batch: the first batch's masks again.
    CHECK(recorded(true) == eager(101));
    CHECK(recorded(true) != eager(seed));
  }
}
