// Parity of the element-wise CUDA kernels (binary, activation, dropout, adam, embedding, dtype
// conversion) with the CPU reference, forward and backward, under the dtype tolerance table.
// Every test skips itself on a machine without a CUDA device.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "attnlab/attnlab.h"
#include "support/tensor_testing.h"

using namespace attnlab;
using testing::compare;
using testing::random_tensor;
using testing::tolerance_for;

namespace {

const Device kCuda = Device::cuda(0);

Tensor host(const Tensor& t) { return t.to(Device::cpu()); }

// Runs f on CPU leaves and on their CUDA copies, backpropagates the same upstream gradient, and
// checks the outputs and every input gradient against the CPU's under the tolerance of `dtype`.
void check_parity(const std::vector<Tensor>& inputs, const std::function<Tensor(const std::vector<Tensor>&)>& f,
                  DType dtype) {
  std::vector<Tensor> cpu_in, gpu_in;
  for (const Tensor& x : inputs) {
    cpu_in.push_back(x.to(dtype).detach().set_requires_grad());
    gpu_in.push_back(x.to(dtype).to(kCuda).detach().set_requires_grad());
  }
  const Tensor y_cpu = f(cpu_in);
  const Tensor y_gpu = f(gpu_in);
  CHECK(y_gpu.device() == kCuda);
  CHECK_TENSOR_NEAR(host(y_gpu), y_cpu, tolerance_for(dtype));
  const Tensor g = random_tensor(y_cpu.shape(), 99, -1.0, 1.0, dtype);
  y_cpu.backward(g);
  y_gpu.backward(g.to(kCuda));
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    INFO("gradient of input " << i);
    CHECK_TENSOR_NEAR(host(gpu_in[i].grad()), cpu_in[i].grad(), tolerance_for(dtype));
  }
}

bool no_device() { return cuda_device_count() == 0; }

}  // namespace

TEST_CASE("cuda binary ops with suffix broadcasting match the cpu forward and backward") {
  if (no_device()) { MESSAGE("no CUDA device: skipped"); return; }
  for (DType dtype : {DType::f32, DType::f64}) {
    CAPTURE(dtype_name(dtype));
    const Tensor a = random_tensor({4, 3, 5}, 1);
    const Tensor b = random_tensor({3, 5}, 2);
    const Tensor c = random_tensor({5}, 3);
    check_parity({a, b}, [](const auto& t) { return add(t[0], t[1]); }, dtype);
    check_parity({a, b}, [](const auto& t) { return sub(t[0], t[1]); }, dtype);
    check_parity({a, c}, [](const auto& t) { return mul(t[0], t[1]); }, dtype);
    check_parity({c, a}, [](const auto& t) { return sub(t[0], t[1]); }, dtype);  // broadcast on the left
    check_parity({a, a}, [](const auto& t) { return mul(t[0], t[1]); }, dtype);  // equal shapes
  }
}

TEST_CASE("cuda scale and add_inplace match the cpu") {
  if (no_device()) { MESSAGE("no CUDA device: skipped"); return; }
  for (DType dtype : {DType::f32, DType::f64}) {
    CAPTURE(dtype_name(dtype));
    const Tensor x = random_tensor({7, 33}, 4);
    check_parity({x}, [](const auto& t) { return scale(t[0], -2.5); }, dtype);
    Tensor dst_cpu = x.to(dtype);
    Tensor dst_gpu = x.to(dtype).to(kCuda);
    const Tensor src = random_tensor({7, 33}, 5, -1.0, 1.0, dtype);
    add_inplace(dst_cpu, src);
    add_inplace(dst_gpu, src.to(kCuda));
    CHECK_TENSOR_NEAR(host(dst_gpu), dst_cpu, tolerance_for(dtype));
  }
}

TEST_CASE("cuda activations match the cpu forward and backward") {
  if (no_device()) { MESSAGE("no CUDA device: skipped"); return; }
  for (DType dtype : {DType::f32, DType::f64}) {
    CAPTURE(dtype_name(dtype));
    const Tensor x = random_tensor({16, 65}, 6, -6.0, 6.0);
    check_parity({x}, [](const auto& t) { return relu(t[0]); }, dtype);
    check_parity({x}, [](const auto& t) { return gelu(t[0]); }, dtype);
    check_parity({x}, [](const auto& t) { return attnlab::tanh(t[0]); }, dtype);
    check_parity({x}, [](const auto& t) { return silu(t[0]); }, dtype);
  }
}

TEST_CASE("cuda bf16 binary and activation kernels compute in f32") {
  if (no_device()) { MESSAGE("no CUDA device: skipped"); return; }
  // The CPU kernels have no bf16: the reference is the f32 result of the bf16-rounded inputs.
  const Tensor a = random_tensor({8, 40}, 7).to(DType::bf16);
  const Tensor b = random_tensor({40}, 8).to(DType::bf16);
  const Tensor want_add = add(a.to(DType::f32), b.to(DType::f32));
  const Tensor want_gelu = gelu(a.to(DType::f32));
  const Tensor got_add = add(a.to(kCuda), b.to(kCuda));
  const Tensor got_gelu = gelu(a.to(kCuda));
  CHECK(got_add.dtype() == DType::bf16);
  CHECK_TENSOR_NEAR(host(got_add).to(DType::f32), want_add, tolerance_for(DType::bf16));
  CHECK_TENSOR_NEAR(host(got_gelu).to(DType::f32), want_gelu, tolerance_for(DType::bf16));
}

TEST_CASE("cuda dropout masks are bit-identical to the cpu forward and backward") {
  if (no_device()) { MESSAGE("no CUDA device: skipped"); return; }
  for (DType dtype : {DType::f32, DType::f64}) {
    CAPTURE(dtype_name(dtype));
    // An odd size and an offset, so the last Philox block is partial.
    const Tensor x = random_tensor({37, 101}, 9, 0.5, 1.5);
    for (double p : {0.1, 0.5}) {
      CAPTURE(p);
      const auto f = [p](const std::vector<Tensor>& t) { return dropout(t[0], p, 1234, 77); };
      check_parity({x}, f, dtype);
      const Tensor y_cpu = dropout(x.to(dtype), p, 1234, 77);
      const Tensor y_gpu = host(dropout(x.to(dtype).to(kCuda), p, 1234, 77));
      CHECK_TENSOR_NEAR(y_gpu, y_cpu, testing::Tolerance{0.0, 0.0});  // same mask, same products
    }
  }
}

TEST_CASE("cuda adam_step matches the cpu over several steps") {
  if (no_device()) { MESSAGE("no CUDA device: skipped"); return; }
  for (DType dtype : {DType::f32, DType::f64}) {
    CAPTURE(dtype_name(dtype));
    Tensor p_cpu = random_tensor({9, 31}, 10, -1.0, 1.0, dtype);
    Tensor m_cpu = Tensor::zeros({9, 31}, dtype), v_cpu = Tensor::zeros({9, 31}, dtype);
    Tensor p_gpu = p_cpu.to(kCuda), m_gpu = m_cpu.to(kCuda), v_gpu = v_cpu.to(kCuda);
    for (std::int64_t step = 1; step <= 4; ++step) {
      const Tensor g = random_tensor({9, 31}, 20 + static_cast<std::uint64_t>(step), -1.0, 1.0, dtype);
      const AdamHyper h{1e-2, 0.9, 0.98, 1e-9, step};
      adam_step(p_cpu, g, m_cpu, v_cpu, h);
      adam_step(p_gpu, g.to(kCuda), m_gpu, v_gpu, h);
    }
    CHECK_TENSOR_NEAR(host(p_gpu), p_cpu, tolerance_for(dtype));
    CHECK_TENSOR_NEAR(host(m_gpu), m_cpu, tolerance_for(dtype));
    CHECK_TENSOR_NEAR(host(v_gpu), v_cpu, tolerance_for(dtype));
  }
}

TEST_CASE("cuda embedding matches the cpu forward and its deterministic backward") {
  if (no_device()) { MESSAGE("no CUDA device: skipped"); return; }
  for (DType dtype : {DType::f32, DType::f64}) {
    for (DType ids_dtype : {DType::i32, DType::i64}) {
      CAPTURE(dtype_name(dtype));
      CAPTURE(dtype_name(ids_dtype));
      const Tensor weight = random_tensor({13, 24}, 11, -1.0, 1.0, dtype).set_requires_grad();
      const Tensor ids = testing::random_ids({6, 9}, 12, 13, ids_dtype);  // repeats: rows accumulate
      const Tensor w_gpu = weight.detach().to(kCuda).set_requires_grad();
      const Tensor y_cpu = embedding(weight, ids);
      const Tensor y_gpu = embedding(w_gpu, ids.to(kCuda));
      CHECK_TENSOR_NEAR(host(y_gpu), y_cpu, tolerance_for(dtype));
      const Tensor g = random_tensor(y_cpu.shape(), 13, -1.0, 1.0, dtype);
      y_cpu.backward(g);
      y_gpu.backward(g.to(kCuda));
      // The rows are summed in the CPU's order: bit-identical.
      CHECK_TENSOR_NEAR(host(w_gpu.grad()), weight.grad(), testing::Tolerance{0.0, 0.0});
    }
  }
}

TEST_CASE("cuda embedding refuses an id out of range at the next host wait, once") {
  if (no_device()) { MESSAGE("no CUDA device: skipped"); return; }
  const Tensor weight = Tensor::zeros({4, 3}, DType::f32, kCuda);
  const Tensor ids = Tensor::from_vector<std::int64_t>({3}, {1, 4, -2}).to(kCuda);
  const HostWaits before = host_waits(kCuda);
  const Tensor y = embedding(weight, ids);  // checked by the gather kernel: no wait here
  CHECK((host_waits(kCuda) - before).synchronizations == 0);
  CHECK_THROWS_WITH_AS(y.to(Device::cpu()),
                       doctest::Contains("embedding: id 4 at position 1 is out of range for vocabulary size V = 4"),
                       Error);
  // Reported once; the bad rows are NaN and the good one is the weight's row.
  const std::vector<float> out = y.to_vector<float>();
  CHECK(out[0] == 0.0f);
  CHECK(std::isnan(out[3]));
  CHECK(std::isnan(out[6]));
  // An explicit synchronize() reports it too; a later call's error names that call.
  (void)embedding(weight, Tensor::from_vector<std::int32_t>({2}, {0, 7}).to(kCuda));
  CHECK_THROWS_WITH_AS(synchronize(kCuda), doctest::Contains("id 7 at position 1"), Error);
  synchronize(kCuda);
}

TEST_CASE("cuda embedding backward sorts on the device: no host wait, the CPU's sums bit for bit") {
  if (no_device()) { MESSAGE("no CUDA device: skipped"); return; }
  // A batch-like case: 4096 positions over 1000 rows, a third of them padding id 0.
  for (DType dtype : {DType::f32, DType::f64}) {
    CAPTURE(dtype_name(dtype));
    std::vector<std::int64_t> raw = testing::random_ids({4096}, 31, 1000).to_vector<std::int64_t>();
    for (std::size_t i = 0; i < raw.size(); i += 3) raw[i] = 0;
    const Tensor ids = Tensor::from_vector<std::int64_t>({4096}, raw);
    const Tensor weight = random_tensor({1000, 64}, 32, -1.0, 1.0, DType::f32).to(dtype).set_requires_grad();
    const Tensor w_gpu = weight.detach().to(kCuda).set_requires_grad();
    const Tensor g = random_tensor({4096, 64}, 33, -1.0, 1.0, DType::f32).to(dtype);
    embedding(weight, ids).backward(g);
    const Tensor y_gpu = embedding(w_gpu, ids.to(kCuda));
    const Tensor g_gpu = g.to(kCuda);
    const HostWaits before = host_waits(kCuda);
    y_gpu.backward(g_gpu);
    CHECK((host_waits(kCuda) - before).synchronizations == 0);
    CHECK_TENSOR_NEAR(host(w_gpu.grad()), weight.grad(), testing::Tolerance{0.0, 0.0});
  }
}

TEST_CASE("cuda index_mask matches the cpu in every dtype, without a host wait") {
  if (no_device()) { MESSAGE("no CUDA device: skipped"); return; }
  const double inf = std::numeric_limits<double>::infinity();
  for (DType ids_dtype : {DType::i32, DType::i64}) {
    for (DType dtype : {DType::f32, DType::f64, DType::bf16}) {
      CAPTURE(dtype_name(ids_dtype));
      CAPTURE(dtype_name(dtype));
      const Tensor ids = testing::random_ids({37, 129}, 41, 6, ids_dtype);  // many equal to 0
      const HostWaits before = host_waits(kCuda);
      const Tensor got = index_mask(ids.to(kCuda), 0, -inf, 0.5, dtype);
      CHECK((host_waits(kCuda) - before).synchronizations == 0);
      CHECK(got.device() == kCuda);
      CHECK_TENSOR_NEAR(host(got), index_mask(ids, 0, -inf, 0.5, dtype), testing::Tolerance{0.0, 0.0});
    }
  }
}

TEST_CASE("cuda dtype conversion matches the cpu") {
  if (no_device()) { MESSAGE("no CUDA device: skipped"); return; }
  const Tensor x = random_tensor({5, 77}, 14, -300.0, 300.0);
  const std::vector<std::pair<DType, DType>> pairs = {
      {DType::f32, DType::bf16}, {DType::bf16, DType::f32}, {DType::f32, DType::f64}, {DType::f64, DType::f32},
      {DType::f64, DType::bf16}, {DType::f32, DType::i32},  {DType::f64, DType::i64}, {DType::i32, DType::f32},
      {DType::i64, DType::f64},  {DType::bf16, DType::f64}, {DType::i32, DType::i64}};
  for (const auto& pair : pairs) {
    const DType from = pair.first, to = pair.second;  // (clang < 16 cannot capture structured bindings)
    CAPTURE(dtype_name(from));
    CAPTURE(dtype_name(to));
    const Tensor src = x.to(from);
    const Tensor want = src.to(to);
    const Tensor got = src.to(kCuda).to(to);
    CHECK(got.device() == kCuda);
    CHECK(got.dtype() == to);
    // Exact: both sides apply the same casts and the same bf16 rounding.
    CHECK(host(got).to(DType::f64).to_vector<double>() == want.to(DType::f64).to_vector<double>());
  }
}

TEST_CASE("cuda binary ops with a one-element operand match the cpu forward and backward") {
  if (no_device()) { MESSAGE("no CUDA device: skipped"); return; }
  // The one-element side repeats with period 1 and its gradient is a sum_rows with one column.
  for (DType dtype : {DType::f32, DType::f64}) {
    CAPTURE(dtype_name(dtype));
    const Tensor a = random_tensor({6, 7, 3}, 31);
    const Tensor s = random_tensor({1}, 32);
    check_parity({a, s}, [](const auto& t) { return mul(t[0], t[1]); }, dtype);
    check_parity({s, a}, [](const auto& t) { return sub(t[0], t[1]); }, dtype);
  }
}

TEST_CASE("cuda bf16 scale and dropout equal the f32 result rounded once") {
  if (no_device()) { MESSAGE("no CUDA device: skipped"); return; }
  // bf16 kernels compute in f32 and round the result once, as bf16(f32 result) on the host; the
  // dropout mask is the same Philox stream, so both are bit-identical to the rounded f32 CPU.
  const Tensor x = random_tensor({29, 67}, 33, -3.0, 3.0).to(DType::bf16);
  const Tensor x_f32 = x.to(DType::f32);
  const Tensor x_gpu = x.to(kCuda);
  const testing::Tolerance exact{0.0, 0.0};
  CHECK_TENSOR_NEAR(host(scale(x_gpu, 0.37)).to(DType::f64), scale(x_f32, 0.37).to(DType::bf16).to(DType::f64),
                    exact);
  for (double p : {0.1, 0.5}) {
    CAPTURE(p);
    const Tensor got = host(dropout(x_gpu, p, 4321, 5));
    CHECK(got.dtype() == DType::bf16);
    CHECK_TENSOR_NEAR(got.to(DType::f64), dropout(x_f32, p, 4321, 5).to(DType::bf16).to(DType::f64), exact);
  }
}

TEST_CASE("cuda bf16 gradients of broadcast mul and gelu follow the f32 reference") {
  if (no_device()) { MESSAGE("no CUDA device: skipped"); return; }
  // The reference is the f32 CPU graph on the bf16-rounded values; the bf16 kernels round each
  // stored result, hence the bf16 tolerance. The gradient of the broadcast operand goes through
  // sum_rows (16 rows summed in f32).
  const Tensor a = random_tensor({16, 24}, 34).to(DType::bf16);
  const Tensor b = random_tensor({24}, 35).to(DType::bf16);
  const Tensor g = random_tensor({16, 24}, 36).to(DType::bf16);
  Tensor a_ref = a.to(DType::f32).set_requires_grad(), b_ref = b.to(DType::f32).set_requires_grad();
  Tensor a_gpu = a.to(kCuda).set_requires_grad(), b_gpu = b.to(kCuda).set_requires_grad();
  gelu(mul(a_ref, b_ref)).backward(g.to(DType::f32));
  gelu(mul(a_gpu, b_gpu)).backward(g.to(kCuda));
  CHECK(a_gpu.grad().dtype() == DType::bf16);
  CHECK_TENSOR_NEAR(host(a_gpu.grad()).to(DType::f32), a_ref.grad(), tolerance_for(DType::bf16));
  CHECK_TENSOR_NEAR(host(b_gpu.grad()).to(DType::f32), b_ref.grad(), tolerance_for(DType::bf16));
}

TEST_CASE("cuda bf16 adam_step follows the f32 update") {
  if (no_device()) { MESSAGE("no CUDA device: skipped"); return; }
  // lr = 0.5 makes the step large against the bf16 tolerance, so a missing or wrong update
  // fails; m and v are rounded to bf16 after every step on the device, hence the tolerance.
  const Tensor p0 = random_tensor({7, 45}, 37, -1.0, 1.0).to(DType::bf16);
  Tensor p_ref = p0.to(DType::f32), m_ref = Tensor::zeros({7, 45}), v_ref = Tensor::zeros({7, 45});
  Tensor p_gpu = p0.to(kCuda), m_gpu = Tensor::zeros({7, 45}, DType::bf16, kCuda);
  Tensor v_gpu = Tensor::zeros({7, 45}, DType::bf16, kCuda);
  for (std::int64_t step = 1; step <= 2; ++step) {
    const Tensor g = random_tensor({7, 45}, 40 + static_cast<std::uint64_t>(step), -1.0, 1.0).to(DType::bf16);
    const AdamHyper h{0.5, 0.9, 0.98, 1e-8, step};
    adam_step(p_ref, g.to(DType::f32), m_ref, v_ref, h);
    adam_step(p_gpu, g.to(kCuda), m_gpu, v_gpu, h);
  }
  CHECK_TENSOR_NEAR(host(p_gpu).to(DType::f32), p_ref, tolerance_for(DType::bf16));
  CHECK_TENSOR_NEAR(host(m_gpu).to(DType::f32), m_ref, tolerance_for(DType::bf16));
  CHECK_TENSOR_NEAR(host(v_gpu).to(DType::f32), v_ref, tolerance_for(DType::bf16));
}

TEST_CASE("cuda bf16 embedding copies rows exactly and sums gradients in f32") {
  if (no_device()) { MESSAGE("no CUDA device: skipped"); return; }
  const Tensor weight = random_tensor({11, 33}, 43).to(DType::bf16);
  const Tensor ids = testing::random_ids({5, 8}, 44, 11, DType::i32);  // repeats accumulate
  const Tensor g = random_tensor({5, 8, 33}, 45).to(DType::bf16);
  Tensor w_ref = weight.to(DType::f32).set_requires_grad();
  Tensor w_gpu = weight.to(kCuda).set_requires_grad();
  const Tensor y_ref = embedding(w_ref, ids);
  const Tensor y_gpu = embedding(w_gpu, ids.to(kCuda));
  CHECK_TENSOR_NEAR(host(y_gpu).to(DType::f32), y_ref, testing::Tolerance{0.0, 0.0});
  y_ref.backward(g.to(DType::f32));
  y_gpu.backward(g.to(kCuda));
  // f32 sums rounded once to bf16: within half a bf16 ulp of the f32 reference.
  CHECK_TENSOR_NEAR(host(w_gpu.grad()).to(DType::f32), w_ref.grad(), testing::Tolerance{1e-6, 1.0 / 256});
}

TEST_CASE("cuda element-wise kernels cover more elements than one grid") {
  if (no_device()) { MESSAGE("no CUDA device: skipped"); return; }
  // The element-wise grids are capped at 65535 blocks of 256 threads and loop over the rest; the
  // dropout kernel gives a thread four elements. This size needs more than one pass for both.
  const std::int64_t n = std::int64_t{65535} * 256 * 4 + 5;
  const Tensor x = random_tensor({n}, 46, -2.0, 2.0);
  const Tensor x_gpu = x.to(kCuda);
  const testing::Tolerance exact{0.0, 0.0};
  CHECK_TENSOR_NEAR(host(scale(x_gpu, -1.5)), scale(x, -1.5), exact);
  CHECK_TENSOR_NEAR(host(dropout(x_gpu, 0.3, 99, 12345)), dropout(x, 0.3, 99, 12345), exact);
}
