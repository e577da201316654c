#include "attnlab/dtype.h"

#include <bit>
#include <string>

#include "attnlab/error.h"
#include "attnlab/name_table.h"
#include "cpu/convert_bf16.h"

namespace attnlab {

namespace {

constexpr auto kDTypes = name_table<DType>("dtype", {{DType::f32, "f32"},
                                                     {DType::f64, "f64"},
                                                     {DType::bf16, "bf16"},
                                                     {DType::i32, "i32"},
                                                     {DType::i64, "i64"},
                                                     {DType::u8, "u8"}});
static_assert(kDTypes.entries.size() == kDTypeCount);

}  // namespace

std::string_view dtype_name(DType dtype) { return kDTypes.name(dtype); }

DType dtype_from_name(std::string_view name) { return kDTypes.parse(name); }

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
