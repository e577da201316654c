#pragma once
// Shared pieces of the conformance checks (conformance_*.cpp).
#include <functional>
#include <string>

#include "attnlab/plugin/conformance.h"

namespace attnlab::conformance {

// Small dimensions that still exercise the interesting cases: h * d_v != d_model, d_k != d_v.
BuildContext small_context(const Registry& registry, PluginFamily family, const std::string& name,
                           const ConformanceOptions& options, Generator& init, Generator& dropout,
                           DType dtype = DType::f64);

// Runs `body`; an exception or a false return fails the check with its message.
void run_check(ConformanceReport& report, const std::string& name,
               const std::function<std::string()>& body);

// Empty when a and b agree to within tol (max abs difference); else a message naming what.
std::string compare(const Tensor& a, const Tensor& b, double tol, const std::string& what);

// Values uniform in [-1, 1) from seed, f64 on device.
Tensor random_input(const Shape& shape, std::uint64_t seed, Device device);

// Slices [:, begin:end, ...] of a [B, T, ...] tensor.
Tensor slice_time(const Tensor& x, std::int64_t begin, std::int64_t end);

void check_attention(const Registry& registry, const std::string& name,
                     const ConformanceOptions& options, ConformanceReport& report);
void check_positional(const Registry& registry, const std::string& name,
                      const ConformanceOptions& options, ConformanceReport& report);
void check_ffn(const Registry& registry, const std::string& name, const ConformanceOptions& options,
               ConformanceReport& report);
void check_dropout(const Registry& registry, const std::string& name,
                   const ConformanceOptions& options, ConformanceReport& report);

}  // namespace attnlab::conformance
