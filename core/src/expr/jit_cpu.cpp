// The CPU kernels of score expressions: C++ generated from the program (codegen.h), compiled by
// the system's C++ compiler into a shared object of the kernel cache (kernel_cache.h), loaded with
// Boost.DLL. The tile loops run the program's statements for each score; the compiler vectorizes
// them over the keys of a row (it is asked for the CPU's vector instructions: x86-64-v4 with
// AVX-512, v3 with AVX2, and for no contraction into fused multiply-adds, so that the kernels
// compute what the dense reference interprets).
#include "attnlab/expr/score_kernels.h"

#include <atomic>
#include <map>
#include <mutex>

#define BOOST_DLL_USE_STD_FS
#include <boost/dll/shared_library.hpp>

#include "attnlab/build_info.h"
#include "attnlab/env.h"
#include "attnlab/process.h"
#include "expr/codegen.h"
#include "expr/ir.h"
#include "expr/jit_cpu.h"
#include "attnlab/expr/kernel_cache.h"

namespace attnlab::expr {
namespace detail {
extern const char kTileAbiText[];
extern const char kVectorMathText[];
}
namespace {

std::atomic<std::int64_t> compiled_count{0};

std::string compiler() { return env::value("ATTNLAB_CXX").value_or("c++"); }

// The compiler's own description of itself (its --version line), asked once per process and compiler.
std::string compiler_identity() {
  static std::mutex mutex;
  static std::map<std::string, std::string> known;
  const std::string cxx = compiler();
  std::lock_guard lock(mutex);
  if (auto it = known.find(cxx); it != known.end()) return it->second;
  const std::string identity = [&] {
    ProcessResult r;
    try {
      r = run_program({cxx, "--version"});
    } catch (const Error& e) {
      throw Error(fmt::format("score expressions: the CPU kernels are compiled with the system's C++ compiler, and "
                              "'{}' cannot be run ({}); install one (scripts/setup.sh installs g++) or name it in "
                              "ATTNLAB_CXX",
                              cxx, e.what()));
    }
    ATTNLAB_CHECK(r.exit_code == 0, "score expressions: '{} --version' failed ({}): {}", cxx, r.exit_code, r.err);
    return r.out.substr(0, r.out.find('\n'));
  }();
  return known[cxx] = identity;
}

// The vector instructions the kernels are compiled for: the best x86-64 level this CPU has.
std::string arch_flag() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl"))
    return "-march=x86-64-v4";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi2"))
    return "-march=x86-64-v3";
  return "-march=x86-64-v2";
#else
  return "-O2";
#endif
}

std::vector<std::string> flags() {
  return {"-x", "c++", "-std=c++20", "-O3", arch_flag(), "-fPIC", "-shared", "-fno-math-errno", "-ffp-contract=off",
          "-fvisibility=hidden", "-w"};
}

// One direction's function for scalar `real` (float or double).
std::string tile_function(const ScoreExpr& e, const std::string& real, bool backward) {
  const Program& p = e.program();
  const Dialect d{false, real};
  const std::string name = fmt::format("attnlab_expr_{}_{}", backward ? "backward" : "forward",
                                       real == "float" ? "f32" : "f64");
  std::string out = fmt::format("extern \"C\" __attribute__((visibility(\"default\"))) void {}(const attnlab_expr_tile* a) {{\n", name);
  out += fmt::format("  typedef {} T;\n  const int b = a->b, h = a->h, q_len = a->q_len, kv_len = a->kv_len;\n", real);
  for (std::size_t t = 0; t < e.tensors().size(); ++t)
    out += fmt::format("  const T* const t{0} = (const T*)a->tensors[{0}];\n", t);
  const std::string score_value = p.score >= 0 ? value_of(p, p.score, d) : "score";
  const std::string keep_value = p.mask >= 0 ? value_of(p, p.mask, d) : "1";
  auto statements = [&](const std::vector<int>& roots, const std::string& indent) {
    std::vector<bool> done(p.nodes.size(), false);
    return emit_nodes(p, p.live(roots), done, e.tensors(), d, indent);
  };
  const std::string row = "    const int q_idx = a->q0 + r;\n";
  const std::string col = "      const int kv_idx = a->k0 + c;\n";
  if (!backward) {
    out += "  for (int r = 0; r < a->rows; ++r) {\n    T* const s = (T*)a->s + (long long)r * a->ld;\n" + row;
    if (p.mask >= 0) {
      out += "    if (a->apply_mask) {\n      for (int c = 0; c < a->cols; ++c) {\n" + col +
             "      const T score = s[c];\n" + statements({p.score, p.mask}, "      ") +
             fmt::format("      s[c] = {} ? {} : -ax_inf((T)0);\n      }}\n      continue;\n    }}\n", keep_value,
                         score_value);
    }
    if (p.score >= 0)
      out += "    for (int c = 0; c < a->cols; ++c) {\n" + col + "      const T score = s[c];\n" +
             statements({p.score}, "      ") + fmt::format("      s[c] = {};\n    }}\n", score_value);
    out += "  }\n}\n";
    return out;
  }
  // d score_mod / d score (1 without score_mod).
  const std::string d_score = p.d_score >= 0 ? value_of(p, p.d_score, d) : std::string("(T)1");
  // The learned tensors' shares first: ds may be g itself, and this loop reads g.
  if (!p.d_loads.empty()) {
    std::vector<int> roots = {p.mask};
    for (const auto& l : p.d_loads) roots.push_back(l.grad), roots.push_back(l.load);
    out += "  if (a->grads) for (int r = 0; r < a->rows; ++r) {\n"
           "    const T* const s = (const T*)a->s + (long long)r * a->ld;\n"
           "    const T* const g = (const T*)a->g + (long long)r * a->ld;\n" + row +
           "    for (int c = 0; c < a->cols; ++c) {\n      if (g[c] == (T)0) continue;\n" + col +
           "      const T score = s[c];\n" + statements(roots, "      ");
    if (p.mask >= 0) out += fmt::format("      if (a->apply_mask && !{}) continue;\n", keep_value);
    for (const auto& l : p.d_loads) {
      const int t = p.nodes[static_cast<std::size_t>(l.load)].tensor;
      out += fmt::format("      if (a->grads[{0}]) a->grads[{0}][{1}] += (double)(g[c] * {2});\n", t, offset_of(l.load),
                         value_of(p, l.grad, d));
    }
    out += "    }\n  }\n";
  }
  out += "  for (int r = 0; r < a->rows; ++r) {\n"
         "    const T* const s = (const T*)a->s + (long long)r * a->ld;\n"
         "    const T* const g = (const T*)a->g + (long long)r * a->ld;\n"
         "    T* const ds = (T*)a->ds + (long long)r * a->ld;\n" + row +
         "    for (int c = 0; c < a->cols; ++c) {\n" + col + "      const T score = s[c];\n      const T gc = g[c];\n" +
         statements({p.d_score, p.mask}, "      ");
  const std::string kept = p.mask >= 0 ? fmt::format("(!a->apply_mask || {})", keep_value) : "1";
  out += fmt::format("      ds[c] = ({} && gc != (T)0) ? (T)(gc * {}) : (T)0;\n    }}\n  }}\n}}\n", kept, d_score);
  return out;
}

struct Loaded {
  boost::dll::shared_library library;
  CpuKernels kernels;
};

std::mutex loaded_mutex;
std::map<std::string, std::unique_ptr<Loaded>>& loaded() {
  static std::map<std::string, std::unique_ptr<Loaded>> m;
  return m;
}
// Programs met before, by their canonical text (no source to generate on every call).
std::map<std::string, const CpuKernels*>& by_program() {
  static std::map<std::string, const CpuKernels*> m;
  return m;
}

std::string cache_key(const std::string& source) {
  std::string what = source + "\n" + compiler_identity() + "\n" + core_build_id();
  for (const auto& f : flags()) what += " " + f;
  return "cpu-" + hash_hex(what);
}

}  // namespace

std::string cpu_kernel_source(const ScoreExpr& e) {
  std::string out = "// attnlab score expressions: CPU kernels generated from\n";
  for (const ExprText* t : {&e.source().score_mod, &e.source().mask_mod})
    if (!t->empty()) out += "//   " + std::string(t == &e.source().score_mod ? "score_mod = " : "mask_mod  = ") + t->text + "\n";
  out += std::string(detail::kTileAbiText) + "\n#include <math.h>\n" + detail::kVectorMathText +
         helpers(Dialect{false, "float"});
  out += tile_function(e, "float", false) + tile_function(e, "float", true);
  out += tile_function(e, "double", false) + tile_function(e, "double", true);
  return out;
}

bool cpu_kernels_cached(const ScoreExpr& e) {
  const std::string source = cpu_kernel_source(e);
  return artifact_present(cache_key(source), ".so", source);
}

std::string kernel_cache_folder() { return kernel_cache_dir().string(); }

std::int64_t cpu_kernels_compiled() { return compiled_count.load(); }

namespace {

// The shared object of C++ `source` (with the kernels' flags and `extra`) in the kernel cache:
// found, or compiled now.
Cached compiled(const std::string& source, const std::vector<std::string>& extra) {
  std::string what = source;
  for (const auto& f : extra) what += " " + f;
  return cached_artifact(cache_key(what), ".so", source,
                         [&](const std::filesystem::path& src, const std::filesystem::path& out) {
    std::vector<std::string> argv = {compiler()};
    for (const auto& f : flags()) argv.push_back(f);
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.insert(argv.end(), {"-o", out.string(), src.string()});
    const ProcessResult r = run_program(argv);
    if (r.exit_code != 0) {
      std::string command;
      for (const auto& a : argv) command += (command.empty() ? "" : " ") + a;
      throw Error(fmt::format("score expressions: compiling the CPU kernels failed (exit {}): {}\n{}{}", r.exit_code,
                              command, r.err.substr(0, 4000), r.out.substr(0, 1000)));
    }
    ATTNLAB_CHECK(std::filesystem::exists(out), "score expressions: the compiler '{}' exited 0 but wrote no shared "
                  "object", argv[0]);
    compiled_count.fetch_add(1);
  });
}

}  // namespace

const CpuKernels& cpu_kernels(const ScoreExpr& e) {
  std::lock_guard lock(loaded_mutex);
  if (auto p = by_program().find(e.canonical()); p != by_program().end()) return *p->second;
  const std::string source = cpu_kernel_source(e);
  const std::string key = cache_key(source);
  auto it = loaded().find(key);
  if (it != loaded().end()) return *(by_program()[e.canonical()] = &it->second->kernels);
  const Cached c = compiled(source, {});
  auto l = std::make_unique<Loaded>();
  l->library.load(c.path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  auto fn = [&](const char* name) { return &l->library.get<void(const attnlab_expr_tile*)>(name); };
  l->kernels.forward_f32 = fn("attnlab_expr_forward_f32");
  l->kernels.backward_f32 = fn("attnlab_expr_backward_f32");
  l->kernels.forward_f64 = fn("attnlab_expr_forward_f64");
  l->kernels.backward_f64 = fn("attnlab_expr_backward_f64");
  l->kernels.library = c.path.string();
  l->kernels.compiled_now = c.made_now;
  const CpuKernels* k = &loaded().emplace(key, std::move(l)).first->second->kernels;
  return *(by_program()[e.canonical()] = k);
}

std::vector<void*> compile_and_load(const std::string& source, const std::vector<std::string>& extra,
                                    const std::vector<std::string>& symbols) {
  std::lock_guard lock(loaded_mutex);
  const Cached c = compiled(source, extra);
  // Loaded for the rest of the process.
  static std::vector<std::unique_ptr<boost::dll::shared_library>> libraries;
  libraries.push_back(std::make_unique<boost::dll::shared_library>());
  libraries.back()->load(c.path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  std::vector<void*> out;
  for (const auto& name : symbols) out.push_back(reinterpret_cast<void*>(&libraries.back()->get<void()>(name)));
  return out;
}

void forget_loaded_cpu_kernels() {
  std::lock_guard lock(loaded_mutex);
  by_program().clear();
  // The libraries stay loaded: kernels handed out before may still be called.
  static std::vector<std::unique_ptr<Loaded>> kept;
  for (auto& [key, l] : loaded()) kept.push_back(std::move(l));
  loaded().clear();
}

MaskReads mask_reads(const ScoreExpr& e) {
  const Program& p = e.program();
  MaskReads r;
  if (p.mask < 0) return r;
  const std::vector<bool> used = p.live({p.mask});
  for (std::size_t k = 0; k < p.nodes.size(); ++k) {
    if (!used[k] || p.nodes[k].op != Op::variable) continue;
    const Var v = p.nodes[k].var;
    r.b = r.b || v == Var::b;
    r.h = r.h || v == Var::h;
    r.lengths = r.lengths || v == Var::q_len || v == Var::kv_len;
  }
  return r;
}

TileMap tile_map(const ScoreExpr& e, std::int64_t batch, std::int64_t heads, std::int64_t tq, std::int64_t tk,
                 std::int64_t q_offset, const std::vector<std::int64_t>& q_len, const std::vector<std::int64_t>& kv_len,
                 std::int64_t tile_rows, std::int64_t tile_cols) {
  TileMap m;
  if (!e.has_mask_mod()) return m;
  const MaskReads reads = mask_reads(e);
  m.by_b = reads.b || reads.lengths;
  m.by_h = reads.h;
  m.tiles_q = (tq + tile_rows - 1) / tile_rows;
  m.tiles_k = (tk + tile_cols - 1) / tile_cols;
  const std::int64_t gb = m.by_b ? batch : 1, gh = m.by_h ? heads : 1;
  m.classes.resize(static_cast<std::size_t>(gb * gh * m.tiles_q * m.tiles_k));
  std::size_t at = 0;
  for (std::int64_t b = 0; b < gb; ++b)
    for (std::int64_t h = 0; h < gh; ++h)
      for (std::int64_t a = 0; a < m.tiles_q; ++a)
        for (std::int64_t c = 0; c < m.tiles_k; ++c) {
          const TileBox box{b, h, q_offset + a * tile_rows, q_offset + std::min((a + 1) * tile_rows, tq), c * tile_cols,
                            std::min((c + 1) * tile_cols, tk), q_len[static_cast<std::size_t>(b)],
                            kv_len[static_cast<std::size_t>(b)]};
          m.classes[at++] = static_cast<unsigned char>(classify_tile(e, box));
        }
  return m;
}

TileMask classify_tile(const ScoreExpr& e, const TileBox& box) {
  const Program& p = e.program();
  if (p.mask < 0) return TileMask::kept;
  VarRanges r = static_ranges(e.limits());
  auto range = [](std::int64_t lo, std::int64_t hi) { return Interval{static_cast<double>(lo), static_cast<double>(hi)}; };
  r.vars[static_cast<int>(Var::b)] = range(box.b, box.b);
  r.vars[static_cast<int>(Var::h)] = range(box.h, box.h);
  r.vars[static_cast<int>(Var::q_idx)] = range(box.q_begin, box.q_end - 1);
  r.vars[static_cast<int>(Var::kv_idx)] = range(box.k_begin, box.k_end - 1);
  r.vars[static_cast<int>(Var::q_len)] = range(box.q_len, box.q_len);
  r.vars[static_cast<int>(Var::kv_len)] = range(box.kv_len, box.kv_len);
  const Interval m = intervals(p, r, p.mask)[static_cast<std::size_t>(p.mask)];
  if (m.known_true()) return TileMask::kept;
  if (m.known_false()) return TileMask::removed;
  return TileMask::mixed;
}

}  // namespace attnlab::expr
