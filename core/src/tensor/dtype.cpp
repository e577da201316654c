#include "attnlab/dtype.h"

#include <bit>
#include <string>

#include "attnlab/error.h"
#include "cpu/convert_bf16.h"

namespace attnlab {

std::string_view dtype_name(DType dtype) { return kDTypeNames[static_cast<std::size_t>(dtype)]; }

DType dtype_from_name(std::string_view name) {
  for (std::size_t i = 0; i < kDTypeCount; ++i)
    if (kDTypeNames[i] == name) return static_cast<DType>(i);
  throw Error(fmt::format("unknown dtype '{}' (valid: {})", name, fmt::join(kDTypeNames, ", ")));
}

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::f32: return 4;
    case DType::f64: return 8;
    case DType::bf16: return 2;
    case DType::i32: return 4;
    case DType::i64: return 8;
    case DType::u8: return 1;
  }
  return 0;
}

bool dtype_is_floating(DType dtype) {
  return dtype == DType::f32 || dtype == DType::f64 || dtype == DType::bf16;
}
bool dtype_is_integer(DType dtype) { return !dtype_is_floating(dtype); }

// Round to nearest, ties to even; a NaN stays a (quiet) NaN.
bf16::bf16(float value) : bits(cpu::bf16_round_bits(std::bit_cast<std::uint32_t>(value))) {}

bf16::operator float() const { return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16); }

}  // namespace attnlab
