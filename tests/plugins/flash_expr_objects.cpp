// The shared objects of the emulated flash kernels with score expressions (flash_expr_objects.h).
#include "flash_expr_objects.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "attnlab/expr/kernel_cache.h"
#include "attnlab/expr/score_kernels.h"
#include "expr/jit_cpu.h"

namespace flash_expr_objects {

using namespace attnlab;
using testing::head_tensor;
using Variant = testing::ExpressionVariant;

std::vector<Variant> variants() {
  return {
      {"causal", "", "kv_idx <= q_idx", {}},
      {"alibi", "score - slope[h] * abs(q_idx - kv_idx)", "", {head_tensor("slope", {2}, expr::TensorInit::alibi_slopes, false)}},
      {"t5", "score + bias[h, clamp(kv_idx - q_idx, -5, 5) + 5]", "",
       {head_tensor("bias", {2, 11}, expr::TensorInit::normal, true)}},
      {"window", "", "kv_idx == 0 || abs(q_idx - kv_idx) <= 9", {}},
      {"softcap", "4 * tanh(score / 4)", "", {}},
      {"temperature", "score * temp[h]", "", {head_tensor("temp", {2}, expr::TensorInit::values, true, {1.5, 0.7})}},
      {"lengths", "score - 0.05 * float(kv_len - kv_idx)", "q_idx < q_len - 2", {}},
  };
}

std::shared_ptr<const expr::ScoreExpr> build(const Variant& v) { return testing::build_variant(v, 2, 512); }


// A hash of every header the shared object may include (flash's kernels, the emulation, the core's
// headers): the kernel cache keys the shared object by its source, which names them only, so the
// hash goes into the source and an edited header is compiled anew.
namespace {

std::string headers_hash(const std::string& root) {
  namespace fs = std::filesystem;
  std::string all;
  for (const char* dir : {"plugins/attention/flash", "tests/support", "core/include/attnlab"}) {
    std::vector<fs::path> files;
    for (const auto& f : fs::recursive_directory_iterator(fs::path(root) / dir))
      if (f.is_regular_file()) files.push_back(f.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      std::ifstream in(f, std::ios::binary);
      std::ostringstream text;
      text << in.rdbuf();
      all += f.generic_string() + "\n" + text.str();
    }
  }
  return expr::hash_hex(all);
}

// A shared object of emulated kernels: `prelude` (its includes), the structs generated for every
// variant (VariantN), `body` (shared memory and the runners), and per (name, call) of `calls` an
// entry point `extern "C" void name(const ExprEmulationArgs* a)` that calls call(*a); compiled
// with the tests', flash's and the core's headers, and `flags` besides.
std::vector<void*> load_object(std::string source, const std::string& body,
                               const std::vector<std::pair<std::string, std::string>>& calls,
                               std::vector<std::string> flags) {
  const auto vs = variants();
  for (std::size_t v = 0; v < vs.size(); ++v)
    source += expr::cuda_expressions_source(*build(vs[v]), fmt::format("Variant{}", v));
  source += body;
  std::vector<std::string> symbols;
  for (const auto& [name, call] : calls) {
    source += fmt::format("extern \"C\" __attribute__((visibility(\"default\"))) void {}(const ExprEmulationArgs* a) "
                          "{{ {}(*a); }}\n",
                          name, call);
    symbols.push_back(name);
  }
  const std::string root = ATTNLAB_TEST_SOURCE_DIR;
  source += "// the headers: " + headers_hash(root) + "\n";
  for (const std::string dir : {"/tests", "/plugins/attention/flash", "/core/include"}) flags.push_back("-I" + root + dir);
  flags.insert(flags.begin(), "-O1");
  return expr::compile_and_load(source, flags, symbols);
}

}  // namespace

// The shared object's entry points: variant v on the FMA kernels in f32 at 3 v, in bf16 at 3 v + 1,
// on the tensor-core kernels (bf16) at 3 v + 2.
const std::vector<void*>& entries() {
  static const std::vector<void*> loaded = [] {
    const std::string prelude =
        "#include \"support/cuda_host_emulation.h\"\n#include \"flash_backward_kernels.cuh\"\n"
        "#include \"flash_forward_kernels.cuh\"\n#include \"flash_tc_backward_kernels.cuh\"\n"
        "#include \"flash_tc_forward_kernels.cuh\"\n#include \"support/flash_expr_emulation.h\"\n"
        "#include \"support/flash_expr_runner.h\"\n";
    const std::string body = R"(
namespace attnlab::flash::cuda::kernels {
float smem[1 << 16];
}
namespace attnlab::flash::cuda::tc {
alignas(128) unsigned char tc_smem[128 * 1024];
}
namespace {
namespace k = attnlab::flash::cuda::kernels;
namespace tc = attnlab::flash::cuda::tc;
namespace runner = flash_expr_runner;
template <typename T, typename E>
void run(const ExprEmulationArgs& a) {
  constexpr int DK = kEmulatedDk, DV = kEmulatedDv;
  const auto order = runner::thread_order(a);
  const k::Inputs<T> in = runner::inputs<T>(a);
  const std::int64_t bh = static_cast<std::int64_t>(a.batch) * a.heads;
  const k::Grid gq = k::query_tile_grid(bh, a.tq);
  cuda_host_emulation::launch(dim3(gq.x, gq.y), k::kThreads,
                              [&] { k::forward_kernel<T, DK, DV, E>(in, static_cast<T*>(a.out), a.lse); });
  const k::BackwardInputs<T> bin = runner::backward_inputs(a, in, DV);
  cuda_host_emulation::launch(dim3(gq.x, gq.y), k::kThreads,
                              [&] { k::dq_kernel<T, DK, DV, E>(bin, static_cast<T*>(a.dq), nullptr); });
  const k::Grid gk = k::key_tile_grid(bh, a.tk);
  cuda_host_emulation::launch(dim3(gk.x, gk.y), k::kThreads, [&] {
    k::dkdv_kernel<T, DK, DV, E>(bin, static_cast<T*>(a.dk), static_cast<T*>(a.dv), nullptr);
  });
}
// The tensor-core kernels (bf16, head size kTcHead), D from the FMA path's delta kernel.
template <typename E>
void run_tc(const ExprEmulationArgs& a) {
  using T = __nv_bfloat16;
  constexpr int D = kTcHead;
  const auto order = runner::thread_order(a);
  const k::Inputs<T> in = runner::inputs<T>(a);
  const std::int64_t bh = static_cast<std::int64_t>(a.batch) * a.heads;
  const k::Grid gq = tc::query_tile_grid(bh, a.tq);
  cuda_host_emulation::launch(dim3(gq.x, gq.y), tc::kThreads,
                              [&] { tc::forward_kernel<D, D, E>(in, static_cast<T*>(a.out), a.lse); });
  const k::BackwardInputs<T> bin = runner::backward_inputs(a, in, D);
  cuda_host_emulation::launch(dim3(gq.x, gq.y), tc::kThreads,
                              [&] { tc::dq_kernel<D, D, E>(bin, static_cast<T*>(a.dq)); });
  const k::Grid gk = tc::key_tile_grid(bh, a.tk);
  cuda_host_emulation::launch(dim3(gk.x, gk.y), tc::kThreads, [&] {
    tc::dkdv_kernel<D, D, E>(bin, static_cast<T*>(a.dk), static_cast<T*>(a.dv));
  });
}
}  // namespace
)";
    std::vector<std::pair<std::string, std::string>> calls;
    for (std::size_t v = 0; v < variants().size(); ++v) {
      calls.emplace_back(fmt::format("emulate_{}_f32", v), fmt::format("run<float, Variant{}>", v));
      calls.emplace_back(fmt::format("emulate_{}_bf16", v), fmt::format("run<__nv_bfloat16, Variant{}>", v));
      calls.emplace_back(fmt::format("emulate_{}_tc", v), fmt::format("run_tc<Variant{}>", v));
    }
    return load_object(prelude, body, calls, {});
  }();
  return loaded;
}

// The Hopper kernels' shared object (a build with CUTLASS): their host emulation needs CuTe and
// the CUDA toolkit's host headers (support/cuda_sm90_host_emulation.h), whose folders the build
// names (ATTNLAB_TEST_HOPPER_INCLUDES, '|'-separated). Entry point v runs variant v: the Hopper
// forward and backward (their kExtras variant, as NVRTC compiles them), D from the FMA path's
// delta kernel, at head size kTcHead.
const std::vector<void*>& hopper_entries() {
#if defined(ATTNLAB_TEST_HOPPER_INCLUDES)
  static const std::vector<void*> loaded = [] {
    const std::string prelude =
        "#include \"support/cuda_sm90_host_emulation.h\"\n#include \"flash_backward_kernels.cuh\"\n"
        "#include \"flash_sm90_forward_kernel.cuh\"\n#include \"flash_sm90_backward_kernels.cuh\"\n"
        "#include \"support/flash_expr_emulation.h\"\n"
        "#include \"support/flash_expr_runner.h\"\n";
    const std::string body = R"(
namespace attnlab::flash::cuda::kernels {
float smem[1 << 16];
}
namespace attnlab::flash::cuda::sm90 {
char sm90_smem[kEmulatedSmemBytes];
}
namespace {
namespace k = attnlab::flash::cuda::kernels;
namespace sm90 = attnlab::flash::cuda::sm90;
namespace runner = flash_expr_runner;
template <typename E>
void run_hopper(const ExprEmulationArgs& a) {
  using T = __nv_bfloat16;
  constexpr int D = kTcHead;
  const auto order = runner::thread_order(a);
  const k::Inputs<T> in = runner::inputs<T>(a);
  const std::int64_t bh = static_cast<std::int64_t>(a.batch) * a.heads;
  const dim3 queries(static_cast<unsigned>(bh), static_cast<unsigned>((a.tq + sm90::kBlockM - 1) / sm90::kBlockM));
  const dim3 keys(static_cast<unsigned>(bh), static_cast<unsigned>((a.tk + sm90::kBlockM - 1) / sm90::kBlockM));
  cuda_host_emulation::launch(queries, sm90::kThreads,
                              [&] { sm90::forward_kernel<D, true, false, E>(in, static_cast<T*>(a.out), a.lse); });
  const k::BackwardInputs<T> bin = runner::backward_inputs(a, in, D);
  cuda_host_emulation::launch(queries, sm90::kThreads,
                              [&] { sm90::dq_kernel<D, true, false, E>(bin, static_cast<T*>(a.dq), nullptr); });
  cuda_host_emulation::launch(keys, sm90::kThreads, [&] {
    sm90::dkdv_kernel<D, true, false, E>(bin, static_cast<T*>(a.dk), static_cast<T*>(a.dv));
  });
}
}  // namespace
)";
    std::vector<std::pair<std::string, std::string>> calls;
    for (std::size_t v = 0; v < variants().size(); ++v)
      calls.emplace_back(fmt::format("emulate_hopper_{}", v), fmt::format("run_hopper<Variant{}>", v));
    std::vector<std::string> flags;
    const std::string dirs = ATTNLAB_TEST_HOPPER_INCLUDES;
    for (std::size_t at = 0; at <= dirs.size();) {
      const std::size_t end = std::min(dirs.find('|', at), dirs.size());
      if (end > at) flags.push_back("-isystem" + dirs.substr(at, end - at));
      at = end + 1;
    }
    return load_object(prelude, body, calls, flags);
  }();
  return loaded;
#else
  throw std::runtime_error("this build has no Hopper kernels (no CUTLASS)");
#endif
}

bool hopper_built() {
#if defined(ATTNLAB_TEST_HOPPER_INCLUDES)
  return true;
#else
  return false;
#endif
}

}  // namespace flash_expr_objects
