// Parity of the fused CUDA kernels with the CPU reference: dropout_add_layer_norm and its pre-norm
// pair dropout_add_norm_pair (forward, the five gradients, the mask) and adam_step_multi (against adam_step per tensor). Skipped without a
// CUDA device.
#include <doctest/doctest.h>

#include <cstdint>
#include <tuple>
#include <vector>

#include "attnlab/attnlab.h"
#include "ops/adam_multi_plan.h"
#include "support/cuda_testing.h"
#include "support/tensor_testing.h"

using namespace attnlab;
using testing::random_tensor;
using testing::tolerance_for;
namespace adam_multi = attnlab::detail::adam_multi;

namespace {

const Device kCuda = Device::cuda(0);

Tensor host(const Tensor& t) { return t.to(Device::cpu()); }

// The inputs as leaves on `device` (bias, gamma, beta only when asked for).
DropoutAddLayerNormInputs make_leaves(const Shape& shape, DType dtype, bool affine, Device device) {
  const Shape vec{shape[-1]};
  auto leaf = [&](const Shape& s, std::uint64_t seed, double lo, double hi) {
    return random_tensor(s, seed, lo, hi, dtype).to(device).set_requires_grad();
  };
  DropoutAddLayerNormInputs in;
  in.x = leaf(shape, 1, -2.0, 2.0);
  in.residual = leaf(shape, 2, -1.0, 1.0);
  if (affine) {
    in.bias = leaf(vec, 3, -0.5, 0.5);
    in.gamma = leaf(vec, 4, 0.5, 1.5);
    in.beta = leaf(vec, 5, -0.5, 0.5);
  }
  return in;
}

std::vector<const Tensor*> fields(const DropoutAddLayerNormInputs& in) {
  return {&in.x, &in.bias, &in.residual, &in.gamma, &in.beta};
}

// Zero where dropped: the mask through the x gradient (ds itself is almost never exactly 0).
std::vector<bool> zeros_of(const Tensor& t) {
  std::vector<bool> out;
  for (double v : t.to_vector<double>()) out.push_back(v == 0.0);
  return out;
}

}  // namespace

TEST_CASE("cuda dropout_add_layer_norm matches the cpu forward backward and mask") {
  SKIP_WITHOUT_CUDA();
  // 600 rows: more than one chunk of the column sums; d = 37: rows start inside Philox blocks.
  for (DType dtype : {DType::f32, DType::f64}) {
    for (const Shape& shape : {Shape{3, 96}, Shape{600, 37}, Shape{2, 5, 512}}) {
      for (double p : {0.0, 0.25}) {
        for (bool affine : {true, false}) {
          // With the affine variant the residual scale (DeepNorm's alpha), and at p > 0 RMSNorm's
          // row (not centred); the plain op without.
          const double alpha = affine ? 1.8612097182041991 : 1.0;
          INFO("dtype ", dtype_name(dtype), " shape ", shape.str(), " p ", p, " affine ", affine);
          DropoutAddLayerNormInputs cpu = make_leaves(shape, dtype, affine, Device::cpu());
          DropoutAddLayerNormInputs gpu = make_leaves(shape, dtype, affine, kCuda);
          cpu.residual_scale = gpu.residual_scale = alpha;
          cpu.centered = gpu.centered = !(affine && p > 0.0);
          const Tensor y_cpu = dropout_add_layer_norm(cpu, p, 77, 13, 1e-5);
          const Tensor y_gpu = dropout_add_layer_norm(gpu, p, 77, 13, 1e-5);
          CHECK_TENSOR_NEAR(host(y_gpu), y_cpu, tolerance_for(dtype));
          const Tensor dy = random_tensor(shape, 6, -1.0, 1.0, dtype);
          y_cpu.backward(dy);
          y_gpu.backward(dy.to(kCuda));
          const auto c = fields(cpu), g = fields(gpu);
          for (std::size_t k = 0; k < c.size(); ++k) {
            if (!c[k]->defined()) continue;
            CAPTURE(k);
            CHECK_TENSOR_NEAR(host(g[k]->grad()), c[k]->grad(), tolerance_for(dtype));
          }
          CHECK(zeros_of(host(gpu.x.grad())) == zeros_of(cpu.x.grad()));
        }
      }
    }
  }
}

TEST_CASE("cuda dropout_add_norm_pair matches the cpu: both outputs and the gradients through both") {
  SKIP_WITHOUT_CUDA();
  for (DType dtype : {DType::f32, DType::f64}) {
    for (const Shape& shape : {Shape{3, 96}, Shape{600, 37}}) {
      for (bool centered : {true, false}) {
        INFO("dtype ", dtype_name(dtype), " shape ", shape.str(), " centered ", centered);
        DropoutAddLayerNormInputs cpu = make_leaves(shape, dtype, true, Device::cpu());
        DropoutAddLayerNormInputs gpu = make_leaves(shape, dtype, true, kCuda);
        cpu.centered = gpu.centered = centered;
        const DropoutAddNormPair out_cpu = dropout_add_norm_pair(cpu, 0.25, 77, 13, 1e-5);
        const DropoutAddNormPair out_gpu = dropout_add_norm_pair(gpu, 0.25, 77, 13, 1e-5);
        CHECK_TENSOR_NEAR(host(out_gpu.sum), out_cpu.sum, tolerance_for(dtype));
        CHECK_TENSOR_NEAR(host(out_gpu.normed), out_cpu.normed, tolerance_for(dtype));
        const Tensor g_s = random_tensor(shape, 8, -1.0, 1.0, dtype), dy = random_tensor(shape, 9, -1.0, 1.0, dtype);
        add(sum(mul(out_cpu.sum, g_s)), sum(mul(out_cpu.normed, dy))).backward();
        add(sum(mul(out_gpu.sum, g_s.to(kCuda))), sum(mul(out_gpu.normed, dy.to(kCuda)))).backward();
        const auto c = fields(cpu), g = fields(gpu);
        for (std::size_t k = 0; k < c.size(); ++k) {
          CAPTURE(k);
          CHECK_TENSOR_NEAR(host(g[k]->grad()), c[k]->grad(), tolerance_for(dtype));
        }
        CHECK(zeros_of(host(gpu.x.grad())) == zeros_of(cpu.x.grad()));
      }
    }
  }
}

TEST_CASE("cuda dropout_add_layer_norm equals the cuda composition of dropout add and layer_norm") {
  SKIP_WITHOUT_CUDA();
  for (DType dtype : {DType::f32, DType::f64}) {
    INFO("dtype ", dtype_name(dtype));
    const DropoutAddLayerNormInputs fused_in = make_leaves({300, 130}, dtype, true, kCuda);
    const DropoutAddLayerNormInputs plain_in = make_leaves({300, 130}, dtype, true, kCuda);
    Generator fused_gen(5), plain_gen(5);
    const Tensor fused = dropout_add_layer_norm(fused_in, 0.3, fused_gen, 1e-6);
    const Tensor plain = layer_norm(add(plain_in.residual, dropout(add(plain_in.x, plain_in.bias), 0.3, plain_gen)),
                                    plain_in.gamma, plain_in.beta, 1e-6);
    CHECK(fused_gen.offset() == plain_gen.offset());
    CHECK_TENSOR_NEAR(host(fused), host(plain), tolerance_for(dtype));
    const Tensor dy = random_tensor({300, 130}, 7, -1.0, 1.0, dtype).to(kCuda);
    fused.backward(dy);
    plain.backward(dy);
    const auto f = fields(fused_in), u = fields(plain_in);
    for (std::size_t k = 0; k < f.size(); ++k) {
      CAPTURE(k);
      CHECK_TENSOR_NEAR(host(f[k]->grad()), host(u[k]->grad()), tolerance_for(dtype));
    }
    CHECK(zeros_of(host(fused_in.x.grad())) == zeros_of(host(plain_in.x.grad())));
  }
}

TEST_CASE("cuda adam_step_multi equals adam_step on each tensor, with AdamW's decay and a gradient scale") {
  SKIP_WITHOUT_CUDA();
  // Empty and one-element tensors, one of several chunks, and more tensors than one launch holds.
  std::vector<Shape> shapes = {{0}, {1}, {3, 5}, {2 * adam_multi::kChunk + 3}, {2, 0, 4}};
  for (int i = 0; i < 40; ++i) shapes.push_back(Shape{1 + 37 * i});
  // Adam, then AdamW with its decay and a clipping scale.
  for (const auto setting : {std::pair{0.0, 1.0}, {0.1, 0.25}})
  for (DType dtype : {DType::f32, DType::f64}) {
    const double weight_decay = setting.first, grad_scale = setting.second;
    INFO("dtype ", dtype_name(dtype), ", weight_decay ", weight_decay, ", grad_scale ", grad_scale);
    std::vector<Tensor> p_cpu, m_cpu, v_cpu, p_one, m_one, v_one, p_multi, m_multi, v_multi;
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      p_cpu.push_back(random_tensor(shapes[i], 10 + i, -1.0, 1.0, dtype));
      m_cpu.push_back(Tensor::zeros(shapes[i], dtype));
      v_cpu.push_back(Tensor::zeros(shapes[i], dtype));
      for (auto [from, one, multi] : {std::tuple{&p_cpu, &p_one, &p_multi}, {&m_cpu, &m_one, &m_multi},
                                      {&v_cpu, &v_one, &v_multi}}) {
        one->push_back(from->back().to(kCuda));
        multi->push_back(from->back().to(kCuda));
      }
    }
    for (std::int64_t step = 1; step <= 3; ++step) {
      std::vector<Tensor> g_cpu, g_gpu;
      for (std::size_t i = 0; i < shapes.size(); ++i) {
        g_cpu.push_back(random_tensor(shapes[i], 100 * static_cast<std::uint64_t>(step) + i, -1.0, 1.0, dtype));
        g_gpu.push_back(g_cpu.back().to(kCuda));
      }
      const AdamHyper h{1e-2, 0.9, 0.98, 1e-9, step, weight_decay, grad_scale};
      for (std::size_t i = 0; i < shapes.size(); ++i) {
        adam_step(p_cpu[i], g_cpu[i], m_cpu[i], v_cpu[i], h);
        adam_step(p_one[i], g_gpu[i], m_one[i], v_one[i], h);
      }
      adam_step_multi(p_multi, g_gpu, m_multi, v_multi, h);
    }
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      CAPTURE(i);
      // The same element code as the one-tensor kernel: equal to the bit; the CPU to rounding.
      CHECK(host(p_multi[i]).to_vector<double>() == host(p_one[i]).to_vector<double>());
      CHECK(host(v_multi[i]).to_vector<double>() == host(v_one[i]).to_vector<double>());
      CHECK_TENSOR_NEAR(host(p_multi[i]), p_cpu[i], tolerance_for(dtype));
      CHECK_TENSOR_NEAR(host(m_multi[i]), m_cpu[i], tolerance_for(dtype));
    }
  }
}

TEST_CASE("cuda adam_step_multi splits a tensor larger than one launch") {
  SKIP_WITHOUT_CUDA();
  // More chunks than one launch has blocks: the tensor continues in the next launch.
  const std::int64_t n = adam_multi::kMaxBlocks * adam_multi::kChunk + 5;
  const std::vector<Tensor> p = {random_tensor({7}, 1), random_tensor({n}, 2)};
  const std::vector<Tensor> g = {random_tensor({7}, 3), random_tensor({n}, 4)};
  std::vector<Tensor> p_one, p_multi, m_one, m_multi, v_one, v_multi, g_gpu;
  for (std::size_t i = 0; i < p.size(); ++i) {
    p_one.push_back(p[i].to(kCuda));
    p_multi.push_back(p[i].to(kCuda));
    for (auto* list : {&m_one, &m_multi, &v_one, &v_multi})
      list->push_back(Tensor::zeros(p[i].shape(), DType::f32, kCuda));
    g_gpu.push_back(g[i].to(kCuda));
  }
  const AdamHyper h{};
  for (std::size_t i = 0; i < p.size(); ++i) adam_step(p_one[i], g_gpu[i], m_one[i], v_one[i], h);
  adam_step_multi(p_multi, g_gpu, m_multi, v_multi, h);
  for (std::size_t i = 0; i < p.size(); ++i)
    CHECK(host(p_multi[i]).to_vector<float>() == host(p_one[i]).to_vector<float>());
}

TEST_CASE("cuda adam_step_multi's bf16 copies equal the updated params cast to bf16, and the CPU's") {
  SKIP_WITHOUT_CUDA();
  // A tensor over several launches, a small one, one without a copy.
  const std::int64_t big = adam_multi::kMaxBlocks * adam_multi::kChunk + 5;
  const std::vector<Shape> shapes = {{big}, {7, 45}, {3}};
  std::vector<Tensor> p_cpu, g_cpu, m_cpu, v_cpu, c_cpu, p_gpu, g_gpu, m_gpu, v_gpu, c_gpu;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    p_cpu.push_back(random_tensor(shapes[i], 70 + i));
    g_cpu.push_back(random_tensor(shapes[i], 80 + i));
    m_cpu.push_back(Tensor::zeros(shapes[i]));
    v_cpu.push_back(Tensor::zeros(shapes[i]));
    c_cpu.push_back(i == 2 ? Tensor() : Tensor::zeros(shapes[i], DType::bf16));
    p_gpu.push_back(p_cpu.back().to(kCuda));
    g_gpu.push_back(g_cpu.back().to(kCuda));
    m_gpu.push_back(m_cpu.back().to(kCuda));
    v_gpu.push_back(v_cpu.back().to(kCuda));
    c_gpu.push_back(i == 2 ? Tensor() : c_cpu.back().to(kCuda));
  }
  const AdamHyper h{.lr = 1e-2, .step = 1, .weight_decay = 0.1};
  adam_step_multi(p_cpu, g_cpu, m_cpu, v_cpu, h, c_cpu);
  adam_step_multi(p_gpu, g_gpu, m_gpu, v_gpu, h, c_gpu);
  for (std::size_t i = 0; i < 2; ++i) {
    CAPTURE(i);
    const Tensor copy = host(c_gpu[i]), want = host(p_gpu[i]).to(DType::bf16);
    std::int64_t wrong = 0;
    for (std::int64_t k = 0; k < copy.numel(); ++k) wrong += copy.data<bf16>()[k].bits != want.data<bf16>()[k].bits;
    CHECK(wrong == 0);
    // The CPU's update agrees to rounding, so its copy to within one bf16 step.
    CHECK_TENSOR_NEAR(copy.to(DType::f32), c_cpu[i].to(DType::f32), tolerance_for(DType::bf16));
  }
}

TEST_CASE("cuda bf16 adam_step_multi equals adam_step on each tensor") {
  SKIP_WITHOUT_CUDA();
  // The multi-tensor kernel runs the one-tensor kernel's element code, bf16 loads and stores
  // included, so the two agree to the bit (the CPU has no bf16 Adam to compare with).
  const std::vector<Shape> shapes = {{1}, {7, 45}, {adam_multi::kChunk + 9}};
  std::vector<Tensor> p_one, p_multi, m_one, m_multi, v_one, v_multi;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const Tensor p0 = random_tensor(shapes[i], 60 + i).to(DType::bf16);
    p_one.push_back(p0.to(kCuda));
    p_multi.push_back(p0.to(kCuda));
    for (auto* list : {&m_one, &m_multi, &v_one, &v_multi})
      list->push_back(Tensor::zeros(shapes[i], DType::bf16, kCuda));
  }
  for (std::int64_t step = 1; step <= 2; ++step) {
    std::vector<Tensor> g;
    for (std::size_t i = 0; i < shapes.size(); ++i)
      g.push_back(random_tensor(shapes[i], 70 + 10 * static_cast<std::uint64_t>(step) + i).to(DType::bf16).to(kCuda));
    const AdamHyper h{0.5, 0.9, 0.98, 1e-8, step};
    for (std::size_t i = 0; i < shapes.size(); ++i) adam_step(p_one[i], g[i], m_one[i], v_one[i], h);
    adam_step_multi(p_multi, g, m_multi, v_multi, h);
  }
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    CAPTURE(i);
    CHECK(host(p_multi[i]).to(DType::f32).to_vector<float>() == host(p_one[i]).to(DType::f32).to_vector<float>());
    CHECK(host(m_multi[i]).to(DType::f32).to_vector<float>() == host(m_one[i]).to(DType::f32).to_vector<float>());
  }
}

TEST_CASE("cuda dropout_add_layer_norm parameter gradients over more than 65535 row chunks match the cpu") {
  SKIP_WITHOUT_CUDA();
  // The column sums take chunks of 256 rows on the grid's y axis (at most 65535 blocks): more rows
  // than 65535 * 256 need the chunks strided over it.
  const std::int64_t rows = std::int64_t{65535} * 256 + 300;
  const DropoutAddLayerNormInputs cpu = make_leaves({rows, 2}, DType::f32, true, Device::cpu());
  const DropoutAddLayerNormInputs gpu = make_leaves({rows, 2}, DType::f32, true, kCuda);
  const Tensor y_cpu = dropout_add_layer_norm(cpu, 0.1, 3, 0);
  const Tensor y_gpu = dropout_add_layer_norm(gpu, 0.1, 3, 0);
  const Tensor dy = random_tensor({rows, 2}, 8);
  y_cpu.backward(dy);
  y_gpu.backward(dy.to(kCuda));
  CHECK_TENSOR_NEAR(host(gpu.bias.grad()), cpu.bias.grad(), tolerance_for(DType::f32));
  CHECK_TENSOR_NEAR(host(gpu.gamma.grad()), cpu.gamma.grad(), tolerance_for(DType::f32));
  CHECK_TENSOR_NEAR(host(gpu.beta.grad()), cpu.beta.grad(), tolerance_for(DType::f32));
}
