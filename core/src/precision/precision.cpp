#include "attnlab/precision.h"

#include "attnlab/error.h"
#include "cpu/bf16_gemm.h"

namespace attnlab {
namespace {
thread_local Precision t_precision = Precision::fp32;
}  // namespace

std::string_view precision_name(Precision precision) { return kPrecisions.name(precision); }

std::optional<Precision> find_precision(std::string_view name) { return kPrecisions.find(name); }

Precision precision_from_name(std::string_view name) { return kPrecisions.parse(name); }

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
