#include "attnlab/precision.h"

#include "attnlab/error.h"
#include "cpu/bf16_gemm.h"

namespace attnlab {
namespace {
thread_local Precision t_precision = Precision::fp32;
}  // namespace

std::string_view precision_name(Precision precision) {
  return kPrecisionNames[static_cast<std::size_t>(precision)];
}

std::optional<Precision> find_precision(std::string_view name) {
  for (std::size_t i = 0; i < kPrecisionNames.size(); ++i)
    if (kPrecisionNames[i] == name) return static_cast<Precision>(i);
  return std::nullopt;
}

Precision precision_from_name(std::string_view name) {
  if (auto p = find_precision(name)) return *p;
  throw Error(fmt::format("unknown precision '{}' (valid: {})", name, fmt::join(kPrecisionNames, ", ")));
}

Precision compute_precision() { return t_precision; }

std::string precision_unavailable_reason(Precision precision, Device device) {
  if (precision != Precision::bf16 || !device.is_cpu()) return "";
  const std::string why = cpu::bf16_gemm_unavailable_reason();
  if (why.empty()) return "";
  return fmt::format("bf16 on the CPU needs bf16 GEMMs (oneDNN with AVX512_BF16 instructions), and {}", why);
}

PrecisionGuard::PrecisionGuard(Precision precision) : previous_(t_precision) { t_precision = precision; }
PrecisionGuard::~PrecisionGuard() { t_precision = previous_; }

}  // namespace attnlab
