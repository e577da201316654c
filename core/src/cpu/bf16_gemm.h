#pragma once
// bf16 GEMMs on the host at bf16 speed: oneDNN's matmul primitive (AVX512_BF16 dot products with
// f32 accumulation into an f32 output), the arithmetic that attnlab/precision.h's bf16 math
// defines. OpenBLAS's sbgemm would do the same, but Debian's OpenBLAS is built without it.
// Where this build has no oneDNN or the CPU no AVX512_BF16, gemm_cpu widens the bf16 operands to
// f32 and calls sgemm instead (the same products, exact in f32; slower).
#include <cstdint>
#include <string>

namespace attnlab::cpu {

// True when this build has oneDNN and this CPU has AVX512_BF16, and ATTNLAB_NO_HOST_BF16 is unset
// (set to anything but "" or "0", it turns the oneDNN path off: bf16 then widens to f32).
bool bf16_gemm_available();
// Why bf16_gemm_available() is false, in words ("" when it is true).
std::string bf16_gemm_unavailable_reason();

// Row-major c [m, n] (f32) = op(a) op(b), or += with accumulate; a is [m, k] ([k, m] when ta),
// b [k, n] ([n, k] when tb), both bf16 bits. One oneDNN primitive per shape, created on first use
// and kept (thread-safe). Throws an Error when unavailable. Called outside OpenMP parallel
// regions (oneDNN threads the product itself).
void bf16_gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const std::uint16_t* a,
               const std::uint16_t* b, bool accumulate, float* c);
// The same product with a bf16 output c [m, n] (its bits): each f32 sum rounded once to bf16
// by oneDNN (to nearest even), without accumulation.
void bf16_gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const std::uint16_t* a,
               const std::uint16_t* b, std::uint16_t* c);

// Products computed by bf16_gemm so far (for tests that check the path is taken).
std::uint64_t bf16_gemm_calls();

}  // namespace attnlab::cpu
