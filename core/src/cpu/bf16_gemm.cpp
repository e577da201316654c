#include "cpu/bf16_gemm.h"

#include <atomic>

#include "attnlab/error.h"
#include "attnlab/env.h"

#if ATTNLAB_HAVE_DNNL
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include <oneapi/dnnl/dnnl.hpp>

#include "cpu/onednn_isa.h"
#endif

namespace attnlab::cpu {
namespace {

std::atomic<std::uint64_t> g_calls{0};

bool cpu_has_avx512_bf16() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  return __builtin_cpu_supports("avx512bf16");
#else
  return false;
#endif
}

}  // namespace

std::string bf16_gemm_unavailable_reason() {
  if (env::flag("ATTNLAB_NO_HOST_BF16")) return "ATTNLAB_NO_HOST_BF16 is set";
#if ATTNLAB_HAVE_DNNL
  if (!cpu_has_avx512_bf16()) return "this CPU has no AVX512_BF16 instructions";
  if (!onednn_runs_with(dnnl_cpu_isa_avx512_core_bf16)) return "oneDNN is held below AVX512_BF16 (DNNL_MAX_CPU_ISA)";
  return "";
#else
  return "this build has no oneDNN (install libdnnl-dev and rebuild)";
#endif
}

bool bf16_gemm_available() { return bf16_gemm_unavailable_reason().empty(); }

std::uint64_t bf16_gemm_calls() { return g_calls.load(); }

#if ATTNLAB_HAVE_DNNL
namespace {

using dnnl::memory;

constexpr std::size_t kMaxPrimitives = 512;

// The primitives, one per (ta, tb, m, n, k, accumulate, bf16 out), and the engine they run on.
struct Cache {
  std::mutex mutex;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  std::map<std::tuple<bool, bool, std::int64_t, std::int64_t, std::int64_t, bool, bool>,
           std::shared_ptr<dnnl::matmul>>
      primitives;
};

Cache& cache() {
  static Cache* c = new Cache();  // never destroyed: a static tensor may multiply after main
  return *c;
}

// Row-major descriptors; a transposed operand is the stored matrix read with swapped strides.
memory::desc operand(std::int64_t rows, std::int64_t cols, bool transposed, memory::data_type type) {
  return transposed ? memory::desc({rows, cols}, type, memory::dims{1, rows})
                    : memory::desc({rows, cols}, type, memory::dims{cols, 1});
}

}  // namespace

namespace {

// c [m, n] = op(a) op(b) (+ c with accumulate) with c f32 or bf16 (c_type).
void run_bf16_gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const std::uint16_t* a,
                   const std::uint16_t* b, bool accumulate, memory::data_type c_type, void* c) {
  ATTNLAB_CHECK(bf16_gemm_available(), "bf16 GEMM on the host: {}", bf16_gemm_unavailable_reason());
  Cache& cc = cache();
  const memory::desc a_md = operand(m, k, ta, memory::data_type::bf16);
  const memory::desc b_md = operand(k, n, tb, memory::data_type::bf16);
  const memory::desc c_md({m, n}, c_type, memory::dims{n, 1});
  const bool c_bf16 = c_type == memory::data_type::bf16;
  std::shared_ptr<dnnl::matmul> prim;
  {
    std::lock_guard lock(cc.mutex);
    // Token-based batches change m from step to step: keep the cache bounded (a primitive is a
    // few milliseconds to create again).
    const auto key = std::make_tuple(ta, tb, m, n, k, accumulate, c_bf16);
    if (cc.primitives.size() >= kMaxPrimitives && cc.primitives.count(key) == 0) cc.primitives.clear();
    auto& slot = cc.primitives[key];
    if (!slot) {
      dnnl::primitive_attr attr;
      if (accumulate) {
        dnnl::post_ops ops;
        ops.append_sum(1.0f);  // c = a b + c
        attr.set_post_ops(ops);
      }
      try {
        slot = std::make_shared<dnnl::matmul>(
            dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, b_md, c_md), attr, cc.engine));
      } catch (const dnnl::error& e) {
        throw Error(fmt::format("bf16 GEMM on the host: oneDNN refused [{}, {}] x [{}, {}]{}{}: {}", m, k, k, n,
                                accumulate ? " (accumulating)" : "", c_bf16 ? " (bf16 out)" : "", e.what()));
      }
    }
    prim = slot;
  }
  dnnl::stream stream(cc.engine);
  memory am(a_md, cc.engine, const_cast<std::uint16_t*>(a));
  memory bm(b_md, cc.engine, const_cast<std::uint16_t*>(b));
  memory cm(c_md, cc.engine, c);
  prim->execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
  stream.wait();
  ++g_calls;
}

}  // namespace

void bf16_gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const std::uint16_t* a,
               const std::uint16_t* b, bool accumulate, float* c) {
  run_bf16_gemm(ta, tb, m, n, k, a, b, accumulate, memory::data_type::f32, c);
}

void bf16_gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const std::uint16_t* a,
               const std::uint16_t* b, std::uint16_t* c) {
  run_bf16_gemm(ta, tb, m, n, k, a, b, false, memory::data_type::bf16, c);
}
#else
void bf16_gemm(bool, bool, std::int64_t, std::int64_t, std::int64_t, const std::uint16_t*, const std::uint16_t*, bool,
               float*) {
  throw Error(fmt::format("bf16 GEMM on the host: {}", bf16_gemm_unavailable_reason()));
}
void bf16_gemm(bool, bool, std::int64_t, std::int64_t, std::int64_t, const std::uint16_t*, const std::uint16_t*,
               std::uint16_t*) {
  throw Error(fmt::format("bf16 GEMM on the host: {}", bf16_gemm_unavailable_reason()));
}
#endif

}  // namespace attnlab::cpu
