#include "cpu/convert_bf16.h"

#include <cstring>

// Several instruction-set versions of the loops on x86-64 with GCC or clang (ifunc dispatch).
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(__SANITIZE_ADDRESS__)
#define ATTNLAB_CONVERT_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define ATTNLAB_CONVERT_CLONES
#endif

namespace attnlab::cpu {

ATTNLAB_CONVERT_CLONES
void f32_to_bf16(const float* in, std::uint16_t* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint32_t u;
    std::memcpy(&u, in + i, sizeof u);
    out[i] = bf16_round_bits(u);
  }
}

ATTNLAB_CONVERT_CLONES
void bf16_to_f32(const std::uint16_t* in, float* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint32_t u = static_cast<std::uint32_t>(in[i]) << 16;
    std::memcpy(out + i, &u, sizeof u);
  }
}

}  // namespace attnlab::cpu
