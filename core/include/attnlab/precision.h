#pragma once
// The compute precision of the GEMMs (matmul and linear): thread-local state set with a scoped
// guard. The trainer, evaluation and decoding set it from an experiment's `precision`.
//
//   fp32  f32 GEMMs in full f32 (the default).
//   tf32  f32 GEMMs on CUDA use TF32 tensor cores (inputs rounded to a 10-bit mantissa, f32
//         accumulation); the CPU has no TF32 and computes fp32.
//   bf16  matmul and linear cast f32 operands to bf16 through the differentiable cast() (its
//         backward turns the gradient back into f32) and multiply with f32 accumulation into an
//         f32 output (matmul's bf16_out: rounded once into a bf16 one), on every device: on the
//         CPU through oneDNN's bf16 matmul (AVX512_BF16; core/src/cpu/bf16_gemm.h), or, where
//         the build or the CPU lacks it, by widening the bf16 values to f32 for sgemm. CPU and
//         GPU do the same arithmetic up to the order of the sums. Training in bf16 on a CPU
//         without the fast path is refused (precision_unavailable_reason): it would be slower
//         than fp32.
//
// Only f32 operands are affected: f64 products (gradient checks) are always exact. Everything
// but the GEMMs (softmax, layer norm, the loss, Adam) computes in the tensors' own dtype, except
// the fused attention of the `flash` plugin on CUDA, which under bf16 casts Q, K and V to bf16 the
// same way and runs its bf16 kernels (f32 statistics and accumulation, f32 output), and
// parameters, gradients and optimizer state stay f32 (fp32 master weights).
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "attnlab/device.h"
#include "attnlab/name_table.h"

namespace attnlab {

enum class Precision : std::uint8_t { fp32, tf32, bf16 };
inline constexpr auto kPrecisions =
    name_table<Precision>("precision", {{Precision::fp32, "fp32"}, {Precision::tf32, "tf32"}, {Precision::bf16, "bf16"}});

std::string_view precision_name(Precision precision);
// The precision called `name`, or nothing.
std::optional<Precision> find_precision(std::string_view name);
// Parses a name; throws an Error listing the valid names otherwise.
Precision precision_from_name(std::string_view name);

// Whether `precision` can train on `device` at its speed: bf16 on the CPU needs the host's bf16
// GEMMs (oneDNN and AVX512_BF16 instructions). "" when it can, else why not. (Without them bf16
// still computes, widened to f32, slower than fp32: fine for evaluation, not worth training.)
std::string precision_unavailable_reason(Precision precision, Device device);

// The calling thread's compute precision (fp32 unless a guard is alive).
Precision compute_precision();

// Sets the calling thread's compute precision for its lifetime and restores the previous one.
class PrecisionGuard {
 public:
  explicit PrecisionGuard(Precision precision);
  ~PrecisionGuard();
  PrecisionGuard(const PrecisionGuard&) = delete;
  PrecisionGuard& operator=(const PrecisionGuard&) = delete;

 private:
  Precision previous_;
};

}  // namespace attnlab
