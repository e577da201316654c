// NVRTC compiles flash's FMA kernels (forward, dq, dk/dv), for bf16 at the tensor-core kernels'
// head sizes theirs too, and for sm_90a with d_k = d_v the Hopper kernels' (where the plugin was
// built with CUTLASS, whose CuTe headers NVRTC reads from there), with the struct generated for a site's score expressions
// (attnlab/expr/score_kernels.h: cuda_expressions_source) for one element type, pair of head sizes
// and GPU architecture, into the kernel cache (attnlab/expr/kernel_cache.h). The
// kernel headers come from the plugin itself (flash_rtc_headers.h); the CUDA toolkit's from the
// toolkit the plugin was built with. A compile needs no GPU.
#include <cuda_runtime.h>
#include <nvrtc.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "attnlab/build_info.h"
#include "attnlab/expr/kernel_cache.h"
#include "attnlab/expr/score_kernels.h"
#include "flash_attention_kernels.h"
#include "flash_head_sizes.h"
#include "flash_rtc_headers.h"
#include "flash_sm90.h"

namespace attnlab::flash::detail {
namespace {

namespace fs = std::filesystem;

constexpr const char* kKernelNamespace = "attnlab::flash::cuda::kernels::";
constexpr const char* kTcNamespace = "attnlab::flash::cuda::tc::";
constexpr const char* kSm90Namespace = "attnlab::flash::cuda::sm90::";
constexpr const char* kArtifactMagic = "attnlab-cubin 3";
constexpr const char* kKernels[] = {"forward_kernel", "dq_kernel", "dkdv_kernel"};

// Whether the tensor-core kernels serve this element type and these head sizes.
bool with_tensor_cores(DType element, std::int64_t dk, std::int64_t dv) {
  return element == DType::bf16 && cuda::MmaHeadSizes::has(dk) && cuda::MmaHeadSizes::has(dv);
}

// Whether the Hopper kernels are compiled too: for sm_90a, bf16 and d_k = d_v of MmaHeadSizes, in a
// plugin built with CUTLASS.
bool with_hopper(DType element, std::int64_t dk, std::int64_t dv, const std::string& arch) {
#if defined(ATTNLAB_RTC_CUTLASS_INCLUDE_DIR)
  return arch == "sm_90a" && dk == dv && with_tensor_cores(element, dk, dv);
#else
  (void)element, (void)dk, (void)dv, (void)arch;
  return false;
#endif
}

void check(nvrtcResult r, const char* what) {
  ATTNLAB_CHECK(r == NVRTC_SUCCESS, "score expressions: NVRTC {} failed: {}", what, nvrtcGetErrorString(r));
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  check(nvrtcVersion(&major, &minor), "version");
  return fmt::format("{}.{}", major, minor);
}

std::vector<std::string> options(const std::string& arch, bool hopper) {
  const std::string cuda = ATTNLAB_CUDA_INCLUDE_DIR;
  // -default-device: the kernel headers' host helpers (grid and shared-memory sizes) become device
  // functions NVRTC accepts, and are not called.
  std::vector<std::string> o = {"--gpu-architecture=" + arch, "-std=c++20", "-default-device", "-w", "-I" + cuda,
                                "-I" + cuda + "/cccl"};
#if defined(ATTNLAB_RTC_CUTLASS_INCLUDE_DIR)
  if (hopper) o.push_back(std::string("-I") + ATTNLAB_RTC_CUTLASS_INCLUDE_DIR);
#else
  (void)hopper;
#endif
  return o;
}

// The kernels' names as written in the source (the name expressions NVRTC lowers): the FMA
// family's three, then the tensor-core family's three where they serve, then the Hopper family's
// (their kExtras variant without bucket values) where they do.
std::vector<std::string> name_expressions(DType element, std::int64_t dk, std::int64_t dv, const std::string& arch) {
  const char* type = element == DType::bf16 ? "__nv_bfloat16" : "float";
  std::vector<std::string> names;
  for (const char* kernel : kKernels)
    names.push_back(fmt::format("&{}{}<{}, {}, {}, SiteExpressions>", kKernelNamespace, kernel, type, dk, dv));
  if (with_tensor_cores(element, dk, dv))
    for (const char* kernel : kKernels)
      names.push_back(fmt::format("&{}{}<{}, {}, SiteExpressions>", kTcNamespace, kernel, dk, dv));
  if (with_hopper(element, dk, dv, arch))
    for (const char* kernel : kKernels)
      names.push_back(fmt::format("&{}{}<{}, true, false, SiteExpressions>", kSm90Namespace, kernel, dk));
  return names;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Compiles `source` into `out`: the artifact's header (its magic, the number of kernels and their
// lowered names, a line each) followed by the CUBIN.
void compile(const std::string& source, const std::vector<std::string>& names, const std::string& arch, bool hopper,
             const fs::path& out) {
  std::vector<const char*> header_texts, header_names;
  for (const auto& h : cuda::rtc_headers()) {
    header_texts.push_back(h.text);
    header_names.push_back(h.name);
  }
  nvrtcProgram program = nullptr;
  check(nvrtcCreateProgram(&program, source.c_str(), "attnlab_flash_expressions.cu",
                           static_cast<int>(header_texts.size()), header_texts.data(), header_names.data()),
        "program creation");
  struct Destroy {
    nvrtcProgram& p;
    ~Destroy() { nvrtcDestroyProgram(&p); }
  } destroy{program};
  for (const auto& n : names) check(nvrtcAddNameExpression(program, n.c_str()), "name expression");
  const std::vector<std::string> opts = options(arch, hopper);
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());
  const nvrtcResult r = nvrtcCompileProgram(program, static_cast<int>(argv.size()), argv.data());
  std::size_t log_size = 0;
  nvrtcGetProgramLogSize(program, &log_size);
  std::string log(log_size, '\0');
  if (log_size > 0) nvrtcGetProgramLog(program, log.data());
  ATTNLAB_CHECK(r == NVRTC_SUCCESS, "score expressions: NVRTC could not compile flash's kernels for {}: {}\n{}", arch,
                nvrtcGetErrorString(r), log.substr(0, 6000));
  std::string artifact = fmt::format("{}\n{}\n", kArtifactMagic, names.size());
  for (const auto& n : names) {
    const char* lowered = nullptr;
    check(nvrtcGetLoweredName(program, n.c_str(), &lowered), "lowered name");
    artifact += std::string(lowered) + "\n";
  }
  std::size_t size = 0;
  check(nvrtcGetCUBINSize(program, &size), "CUBIN size");
  std::string cubin(size, '\0');
  check(nvrtcGetCUBIN(program, cubin.data()), "CUBIN");
  std::ofstream file(out, std::ios::binary | std::ios::trunc);
  file << artifact << cubin;
  ATTNLAB_CHECK(file.good(), "score expressions: cannot write {}", out.string());
}

}  // namespace

std::string expression_kernels_source(const std::string& expressions, DType element, std::int64_t dk, std::int64_t dv,
                                      const std::string& arch) {
  ATTNLAB_CHECK(element == DType::f32 || element == DType::bf16,
                "attention flash: score expressions run on cuda in f32 or bf16, not {}", dtype_name(element));
  std::string source = "// flash's kernels with a site's score expressions, for NVRTC\n#include <cuda_bf16.h>\n";
  if (with_tensor_cores(element, dk, dv)) source += "#include <mma.h>\n";
  // The Hopper kernels first: CUTLASS's NVRTC headers name FP_NAN and its kin in an enum, which
  // libcu++'s <cmath> (the other kernels' headers include it) would have made macros.
  if (with_hopper(element, dk, dv, arch))
    source += "#include \"flash_sm90_ops.cuh\"\n#include \"flash_sm90_forward_kernel.cuh\"\n"
              "#include \"flash_sm90_backward_kernels.cuh\"\n";
  source += "#include \"flash_backward_kernels.cuh\"\n#include \"flash_forward_kernels.cuh\"\n";
  if (with_tensor_cores(element, dk, dv))
    source += "#include \"flash_tc_backward_kernels.cuh\"\n#include \"flash_tc_forward_kernels.cuh\"\n";
  return source + expressions;
}

ExpressionKernels compile_expression_kernels_cuda(const std::string& expressions, DType element, std::int64_t dk,
                                                  std::int64_t dv, const std::string& arch) {
  const std::string source = expression_kernels_source(expressions, element, dk, dv, arch);
  const std::vector<std::string> names = name_expressions(element, dk, dv, arch);
  const bool hopper = with_hopper(element, dk, dv, arch);
  std::string what = source + "\nnvrtc " + nvrtc_version() + "\n" + core_build_id();
  for (const auto& o : options(arch, hopper)) what += " " + o;
  for (const auto& n : names) what += "\n" + n;
  const std::string key = "cuda-" + expr::hash_hex(what);
  const expr::Cached c = expr::cached_artifact(key, ".cubin", what, [&](const fs::path&, const fs::path& out) {
    compile(source, names, arch, hopper, out);
  });
  // The artifact: the magic line, the number of kernels and their lowered names, then the CUBIN.
  const std::string text = read_file(c.path);
  ExpressionKernels k;
  k.path = c.path.string();
  k.compiled_now = c.made_now;
  std::size_t at = 0;
  const auto line = [&] {
    const std::size_t end = text.find('\n', at);
    ATTNLAB_CHECK(end != std::string::npos, "score expressions: {} is not a kernel artifact (remove it)", k.path);
    std::string l = text.substr(at, end - at);
    at = end + 1;
    return l;
  };
  ATTNLAB_CHECK(line() == kArtifactMagic && line() == std::to_string(names.size()),
                "score expressions: {} is not a kernel artifact of this version (remove it)", k.path);
  std::string* lowered[] = {&k.forward,    &k.dq,    &k.dkdv,    &k.tc_forward,    &k.tc_dq,
                            &k.tc_dkdv,   &k.hopper_forward, &k.hopper_dq, &k.hopper_dkdv};
  // Without tensor-core kernels there are no Hopper ones either (both need bf16 at MmaHeadSizes).
  ATTNLAB_CHECK(names.size() == 3 || names.size() == 6 || names.size() == 9,
                "score expressions: {} kernels to compile", names.size());
  for (std::size_t n = 0; n < names.size(); ++n) *lowered[n] = line();
  k.cubin = text.substr(at);
  ATTNLAB_CHECK(!k.cubin.empty(), "score expressions: {} holds no CUBIN (remove it)", k.path);
  return k;
}

LoadedExpressionKernels expression_kernels_on(const expr::ScoreExpr& e, DType element, std::int64_t dk, std::int64_t dv,
                                              int device) {
  int major = 0, minor = 0;
  ATTNLAB_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
                    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) == cudaSuccess,
                "attention flash: cannot read the compute capability of cuda:{}", device);
  // sm_90 compiles as sm_90a, with the Hopper kernels, where the build has them and
  // ATTNLAB_FLASH_SM90=1 asks for them (sm_90a code runs on sm_90 exactly).
  const bool hopper = major == 9 && minor == 0 && cuda::sm90_built() && cuda::sm90_opted_in();
  const std::string arch = fmt::format("sm_{}{}{}", major, minor, hopper ? "a" : "");
  static std::mutex mutex;
  static std::map<std::string, LoadedExpressionKernels> loaded;
  const std::string key = fmt::format("{}|{}|{}|{}|{}", e.canonical(), dtype_name(element), dk, dv, arch);
  std::lock_guard lock(mutex);
  if (auto it = loaded.find(key); it != loaded.end()) return it->second;
  const ExpressionKernels k =
      compile_expression_kernels_cuda(expr::cuda_expressions_source(e, "SiteExpressions"), element, dk, dv, arch);
  // The library stays loaded for the rest of the process.
  cudaLibrary_t library = nullptr;
  cudaError_t status = cudaLibraryLoadData(&library, k.cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
  ATTNLAB_CHECK(status == cudaSuccess, "attention flash: cannot load the kernels compiled for score expressions ({}): "
                "{}", k.path, cudaGetErrorString(status));
  LoadedExpressionKernels out;
  const std::string* names[] = {&k.forward, &k.dq,           &k.dkdv,      &k.tc_forward, &k.tc_dq,
                                &k.tc_dkdv, &k.hopper_forward, &k.hopper_dq, &k.hopper_dkdv};
  const void** handles[] = {&out.fma.forward, &out.fma.dq,        &out.fma.dkdv,   &out.tc.forward,  &out.tc.dq,
                            &out.tc.dkdv,     &out.hopper.forward, &out.hopper.dq, &out.hopper.dkdv};
  for (int n = 0; n < 9; ++n) {
    if (names[n]->empty()) continue;  // no tensor-core or Hopper kernels for this problem
    cudaKernel_t kernel = nullptr;
    status = cudaLibraryGetKernel(&kernel, library, names[n]->c_str());
    ATTNLAB_CHECK(status == cudaSuccess, "attention flash: kernel {} is not in {}: {}", *names[n], k.path,
                  cudaGetErrorString(status));
    *handles[n] = reinterpret_cast<const void*>(kernel);
  }
  return loaded.emplace(key, out).first->second;
}

}  // namespace attnlab::flash::detail
