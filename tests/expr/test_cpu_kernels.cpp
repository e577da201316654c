// The compiled CPU kernels of score expressions against the dense reference op (which interprets
// the same program): forward and backward tiles with strides, partial tiles and tiles known kept,
// f32 and f64, learned tensors' gradient shares; and the kernel cache: a shared object compiled
// once, found by the next process, remade when its source differs, a failing compiler reported.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "attnlab/attnlab.h"
#include "attnlab/expr/score_call.h"
#include "attnlab/expr/score_kernels.h"
#include "attnlab/ops/score_expr.h"
#include "expr/jit_cpu.h"
#include "expr_testing.h"
#include "support/env_scope.h"
#include "support/tensor_testing.h"

using namespace attnlab;
using namespace expr_testing;
using testing::random_tensor;

namespace {

namespace fs = std::filesystem;

// A fresh cache folder for one test.
struct TempCache {
  fs::path dir;
  testing::EnvScope env;
  TempCache() {
    dir = fs::temp_directory_path() / fmt::format("attnlab-kernels-{}-{}", ::getpid(),
                                                   std::chrono::steady_clock::now().time_since_epoch().count());
    fs::create_directories(dir);
    env.set("ATTNLAB_KERNEL_CACHE", dir.c_str());
    expr::forget_loaded_cpu_kernels();
  }
  ~TempCache() {
    expr::forget_loaded_cpu_kernels();
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

const char* kScore =
    "max(min(sqrt(exp(score) + 1), 4), log(2 + sigmoid(score))) + pow(abs(score) + 1, 1.5) - clamp(score, -0.5, 0.5) "
    "+ (score > 0 ? score * score : -score) + score % 0.7 + w[h] * score + bias[h, clamp(kv_idx - q_idx, -2, 2) + 2] "
    "+ float((kv_idx - q_idx) / 3 + (q_idx % 4) + clamp(int(score * 3.0), -100, 100) + q_len - kv_len + b)";
const char* kMask = "kv_idx == 0 || (abs(q_idx - kv_idx) <= 3 && !(kv_idx == q_idx + 2))";

std::vector<expr::TensorSpec> tensors() { return {tensor("w", {4}, true), tensor("bias", {4, 5}, true)}; }

// Without exp, log, tanh and sigmoid, whose float versions in the kernels are vectorizable
// approximations (cpu/vector_math.h) where the reference calls the C library.
const char* kExactScore =
    "max(min(sqrt(abs(score) + 1), 4), score * 0.5) + pow(abs(score) + 1, 1.5) - clamp(score, -0.5, 0.5) "
    "+ (score > 0 ? score * score : -score) + score % 0.7 + w[h] * score + bias[h, clamp(kv_idx - q_idx, -2, 2) + 2] "
    "+ float((kv_idx - q_idx) / 3 + (q_idx % 4) + clamp(int(score * 3.0), -100, 100) + q_len - kv_len + b)";

// Runs the kernels over the whole [Tq, Tk] of each (b, h) as tiles of `tq` x `tk` cut from rows of
// stride ld = Tk + 3, and compares with apply_score_expr (forward) and its backward: the same bits
// (`tol` 0), or within tol relative to 1 + |value|.
template <typename T>
void compare_tiles(const char* score_mod, std::int64_t tile_q, std::int64_t tile_k, bool mark_kept_tiles, double tol) {
  const std::int64_t B = 2, H = 4, Tq = 9, Tk = 13, off = 4, ld = Tk + 3;
  const DType dt = dtype_of_v<T>;
  const auto e = build(score_mod, kMask, tensors(), limits(4, 64));
  const auto& k = expr::cpu_kernels(*e);
  std::vector<Tensor> params;
  for (std::size_t t = 0; t < e->tensors().size(); ++t)
    params.push_back(random_tensor(Shape(e->tensors()[t].shape), 40 + t, -1, 1, dt).set_requires_grad());
  const Tensor s = random_tensor({B, H, Tq, Tk}, 7, -2, 2, dt).set_requires_grad();
  const Tensor ql = Tensor::from_vector<std::int32_t>({B}, {12, 7}), kl = Tensor::from_vector<std::int32_t>({B}, {13, 9});
  const expr::ScoreExprCall call{e, params, off, ql, kl};
  const Tensor ref = apply_score_expr(s, call);
  const Tensor gout = random_tensor({B, H, Tq, Tk}, 8, -1, 1, dt);
  ref.backward(gout);
  const auto rv = ref.to_vector<T>(), sv = s.to_vector<T>(), gv = gout.to_vector<T>(), dsv = s.grad().to_vector<T>();
  std::vector<std::vector<double>> shares(params.size());
  for (std::size_t t = 0; t < params.size(); ++t) shares[t].assign(static_cast<std::size_t>(params[t].numel()), 0.0);
  std::vector<T> fwd(static_cast<std::size_t>(Tq * ld)), raw(fwd.size()), g(fwd.size()), ds(fwd.size());
  std::vector<const void*> data;
  std::vector<Tensor> host;
  for (const Tensor& p : params) host.push_back(p.detach());
  for (const Tensor& p : host) data.push_back(p.raw_data());
  std::vector<double*> grads;
  for (auto& sh : shares) grads.push_back(sh.data());
  const std::int32_t qlen[] = {12, 7}, klen[] = {13, 9};
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h) {
      const std::int64_t base = (b * H + h) * Tq * Tk;
      for (std::int64_t i = 0; i < Tq; ++i)
        for (std::int64_t j = 0; j < Tk; ++j) {
          const auto at = static_cast<std::size_t>(i * ld + j), from = static_cast<std::size_t>(base + i * Tk + j);
          raw[at] = fwd[at] = sv[from];
          g[at] = gv[from];
        }
      for (std::int64_t i0 = 0; i0 < Tq; i0 += tile_q)
        for (std::int64_t j0 = 0; j0 < Tk; j0 += tile_k) {
          const int rows = static_cast<int>(std::min(tile_q, Tq - i0)), cols = static_cast<int>(std::min(tile_k, Tk - j0));
          const expr::TileMask m = expr::classify_tile(*e, {b, h, off + i0, off + i0 + rows, j0, j0 + cols, qlen[b], klen[b]});
          attnlab_expr_tile a{};
          a.ld = ld;
          a.rows = rows;
          a.cols = cols;
          a.b = static_cast<int>(b);
          a.h = static_cast<int>(h);
          a.q0 = static_cast<int>(off + i0);
          a.k0 = static_cast<int>(j0);
          a.q_len = qlen[b];
          a.kv_len = klen[b];
          a.apply_mask = mark_kept_tiles && m == expr::TileMask::kept ? 0 : 1;
          a.tensors = data.data();
          a.grads = grads.data();
          a.s = fwd.data() + i0 * ld + j0;
          (std::is_same_v<T, float> ? k.forward_f32 : k.forward_f64)(&a);
          a.s = raw.data() + i0 * ld + j0;
          a.g = g.data() + i0 * ld + j0;
          a.ds = ds.data() + i0 * ld + j0;
          (std::is_same_v<T, float> ? k.backward_f32 : k.backward_f64)(&a);
          if (m == expr::TileMask::removed)
            for (int r = 0; r < rows; ++r)
              for (int c = 0; c < cols; ++c) CHECK(std::isinf(fwd[static_cast<std::size_t>((i0 + r) * ld + j0 + c)]));
        }
      for (std::int64_t i = 0; i < Tq; ++i)
        for (std::int64_t j = 0; j < Tk; ++j) {
          const auto at = static_cast<std::size_t>(i * ld + j), from = static_cast<std::size_t>(base + i * Tk + j);
          INFO("b ", b, " h ", h, " i ", i, " j ", j);
          // The same program in the same precision: the same bits (or both NaN), or within tol.
          auto same = [&](double a, double b) {
            if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
            if (std::isinf(a) || std::isinf(b) || tol == 0.0) return a == b;
            return std::abs(a - b) <= tol * (1.0 + std::abs(b));
          };
          CHECK(same(fwd[at], rv[from]));
          CHECK(same(ds[at], dsv[from]));
        }
    }
  for (std::size_t t = 0; t < params.size(); ++t) {
    const auto want = params[t].grad().to_vector<double>();
    for (std::size_t x = 0; x < want.size(); ++x) {
      INFO("tensor ", t, " element ", x, ": ", shares[t][x], " vs ", want[x]);
      // Added in another order (tile by tile) than the reference's (row by row): close, not equal.
      CHECK(std::abs(shares[t][x] - want[x]) <= std::max(1e-5, 10 * tol) * (1.0 + std::abs(want[x])));
    }
  }
}

}  // namespace

TEST_CASE("compiled tiles equal the dense reference bit for bit: f32 and f64, cut tiles, known-kept tiles") {
  compare_tiles<float>(kExactScore, 4, 5, false, 0.0);
  compare_tiles<double>(kExactScore, 4, 5, false, 0.0);
  compare_tiles<float>(kExactScore, 3, 4, true, 0.0);
  compare_tiles<double>(kScore, 16, 16, true, 0.0);
  compare_tiles<double>(kScore, 4, 5, false, 0.0);
}

TEST_CASE("compiled f32 tiles with exp, log, tanh and sigmoid agree with the dense reference to a few ulp") {
  compare_tiles<float>(kScore, 4, 5, false, 2e-5);
  compare_tiles<float>(kScore, 16, 16, true, 2e-5);
}

TEST_CASE("the kernel cache: compiled once, found by the next process, remade when its source differs") {
  TempCache cache;
  const auto e = build("score * temp[h] + float(kv_idx - q_idx)", "", {tensor("temp", {4}, true)});
  CHECK_FALSE(expr::cpu_kernels_cached(*e));
  const std::int64_t before = expr::cpu_kernels_compiled();
  const auto& first = expr::cpu_kernels(*e);
  CHECK(first.compiled_now);
  CHECK(expr::cpu_kernels_compiled() == before + 1);
  CHECK(expr::cpu_kernels_cached(*e));
  CHECK(fs::path(first.library).parent_path() == cache.dir);
  // A new process: nothing compiled, the shared object loaded from the folder.
  expr::forget_loaded_cpu_kernels();
  const auto& second = expr::cpu_kernels(*e);
  CHECK_FALSE(second.compiled_now);
  CHECK(expr::cpu_kernels_compiled() == before + 1);
  CHECK(second.library == first.library);
  // A source beside it that differs (a hash collision, an edited file) is not trusted.
  fs::path src = fs::path(first.library).replace_extension(".src");
  std::ofstream(src, std::ios::app) << "// edited\n";
  expr::forget_loaded_cpu_kernels();
  CHECK(expr::cpu_kernels(*e).compiled_now);
  CHECK(expr::cpu_kernels_compiled() == before + 2);
}

TEST_CASE("a compiler that cannot be run, or that fails, is reported with what to do") {
  TempCache cache;
  const auto e = build("score + 1.5");
  {
    testing::EnvScope env;
    env.set("ATTNLAB_CXX", "/nonexistent/c++");
    // The compiler's identity is asked once per process: a missing one fails at the compile.
    try {
      expr::cpu_kernels(*e);
      FAIL("no error");
    } catch (const Error& err) {
      const std::string m = err.what();
      CHECK(m.find("/nonexistent/c++") != std::string::npos);
    }
  }
  {
    // A compiler that knows its version and fails on every source.
    const fs::path failing = cache.dir / "failing-c++";
    std::ofstream(failing) << "#!/bin/sh\n[ \"$1\" = --version ] && { echo failing 1.0; exit 0; }\n"
                              "echo 'source:1:1: error: no' >&2\nexit 1\n";
    fs::permissions(failing, fs::perms::owner_all);
    testing::EnvScope env;
    env.set("ATTNLAB_CXX", failing.c_str());
    try {
      expr::cpu_kernels(*e);
      FAIL("no error");
    } catch (const Error& err) {
      const std::string m = err.what();
      CHECK(m.find("compiling the CPU kernels failed (exit 1)") != std::string::npos);
      CHECK(m.find("source:1:1: error: no") != std::string::npos);
    }
  }
  // Nothing half-made was left: the next compile works.
  CHECK(expr::cpu_kernels(*e).library.size() > 0);
}

TEST_CASE("tiles are classified from their positions: removed, kept, mixed") {
  const auto e = build("score", "kv_idx == 0 || abs(q_idx - kv_idx) <= 6", {}, limits(4, 256));
  using expr::TileMask;
  auto at = [&](std::int64_t q0, std::int64_t k0) { return expr::classify_tile(*e, {0, 0, q0, q0 + 4, k0, k0 + 4, 256, 256}); };
  CHECK(at(100, 100) == TileMask::kept);
  CHECK(at(100, 40) == TileMask::removed);
  CHECK(at(100, 0) == TileMask::mixed);    // the sink column
  CHECK(at(100, 104) == TileMask::mixed);  // the window's edge
  const auto none = build("score");
  CHECK(expr::classify_tile(*none, {0, 0, 0, 4, 100, 104, 8, 8}) == TileMask::kept);
}
