#include "attnlab/env.h"

#include <strings.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdlib>

#include "attnlab/error.h"

namespace attnlab::env {
namespace {

// The table in three parts, as the docs list them: the switches that change what a run computes
// (recorded in its manifest), those that change how it runs, and the values.
constexpr Variable kNumericsSwitches[] = {
    {"ATTNLAB_NO_BF16_OPERANDS", Kind::flag, true, "bf16 training casts GEMM operands at each use instead of once per step"},
    {"ATTNLAB_NO_BF16_LOGITS", Kind::flag, true, "bf16 training computes the output projection's logits in f32"},
    {"ATTNLAB_NO_HOST_BF16", Kind::flag, true, "bf16 GEMMs on the host widen to f32 instead of oneDNN's bf16 matmul"},
    {"ATTNLAB_NO_ONEDNN_SGEMM", Kind::flag, true, "f32 GEMMs on the host go to OpenBLAS instead of oneDNN"},
    {"ATTNLAB_FLASH_SM90", Kind::flag, true, "flash takes its Hopper (sm_90a) kernels where they serve a problem"},
};
constexpr Variable kRunSwitches[] = {
    {"ATTNLAB_NO_CACHING_ALLOCATOR", Kind::flag, false, "every tensor's memory straight from malloc (no host cache)"},
    {"ATTNLAB_TRACE_HOST_WAITS", Kind::flag, false, "every host wait for a CUDA device prints where it came from"},
    {"ATTNLAB_PROFILE", Kind::flag, false, "times every op and prints the profile"},
};
constexpr Variable kValues[] = {
    {"ATTNLAB_CUDA_MEMORY_LIMIT", Kind::value, false, "caps what each CUDA device's allocator hands out (e.g. 8GiB)"},
    {"ATTNLAB_PLUGIN_PATH", Kind::value, false, "folders searched for plugins before the installed ones (':'-separated)"},
    {"ATTNLAB_NCCL_LIBRARY", Kind::value, false, "the libnccl.so that data-parallel training on CUDA loads"},
    {"ATTNLAB_FAULT_WRITE", Kind::value, false, "tests: a write error injected (PATTERN:ERROR[:BYTES])"},
    {"ATTNLAB_KERNEL_CACHE", Kind::value, false,
     "the folder of compiled score-expression kernels (default: $XDG_CACHE_HOME/attnlab/kernels)"},
    {"ATTNLAB_CXX", Kind::value, false, "the C++ compiler that compiles score expressions for the CPU (default: c++)"},
};

template <std::size_t... N>
constexpr auto joined(const Variable (&... parts)[N]) {
  std::array<Variable, (N + ...)> out{};
  std::size_t at = 0;
  ((std::copy(std::begin(parts), std::end(parts), out.begin() + at), at += N), ...);
  return out;
}
constexpr auto kVariables = joined(kNumericsSwitches, kRunSwitches, kValues);

const Variable& find(std::string_view name, Kind kind) {
  const auto it = std::find_if(std::begin(kVariables), std::end(kVariables),
                                [&](const Variable& v) { return v.name == name; });
  ATTNLAB_CHECK(it != std::end(kVariables), "env: {} is not in attnlab's table of variables (core/src/base/env.cpp)", name);
  ATTNLAB_CHECK(it->kind == kind, "env: {} is a {}, not a {}", name, it->kind == Kind::flag ? "switch" : "value",
                kind == Kind::flag ? "switch" : "value");
  return *it;
}

// The table's names are string literals, so their view ends at a NUL: getenv takes it as it is,
// without a copy (flag() is asked on every GEMM, by onednn_sgemm_enabled and bf16_gemm_available).
const char* raw(const Variable& v) { return std::getenv(v.name.data()); }

// Whether `text` is one of `words`, in any case.
template <std::size_t N>
bool one_of(const char* text, const std::array<const char*, N>& words) {
  return std::any_of(words.begin(), words.end(), [&](const char* w) { return strcasecmp(text, w) == 0; });
}

}  // namespace

std::span<const Variable> variables() { return kVariables; }

bool flag(std::string_view name) {
  const char* text = raw(find(name, Kind::flag));
  if (text == nullptr) return false;
  static constexpr std::array<const char*, 4> kOn = {"1", "true", "yes", "on"};
  static constexpr std::array<const char*, 5> kOff = {"", "0", "false", "no", "off"};
  if (one_of(text, kOn)) return true;
  if (one_of(text, kOff)) return false;
  throw Error(fmt::format("{}='{}': a switch is on for 1, true, yes or on and off for 0, false, no, off or empty",
                          name, text));
}

std::optional<std::string> value(std::string_view name) {
  const char* text = raw(find(name, Kind::value));
  if (text == nullptr || *text == '\0') return std::nullopt;
  return std::string(text);
}

std::vector<std::pair<std::string, std::string>> set_now(bool numerics_only) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const Variable& v : kVariables) {
    if (numerics_only && !v.numerics) continue;
    if (const char* text = raw(v)) out.emplace_back(std::string(v.name), text);
  }
  return out;
}

}  // namespace attnlab::env
