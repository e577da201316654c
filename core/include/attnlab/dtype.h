#pragma once
// Element types. Every enum that reaches a config, a log or an error has a name table
// (attnlab/name_table.h); DType's is in dtype.cpp, since CUDA sources include this header.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace attnlab {

enum class DType : std::uint8_t { f32, f64, bf16, i32, i64, u8 };
inline constexpr std::size_t kDTypeCount = 6;  // its names: dtype.cpp's table

std::string_view dtype_name(DType dtype);
// Parses "f32", "bf16", ... ; throws an Error listing the valid names otherwise.
DType dtype_from_name(std::string_view name);
std::size_t dtype_size(DType dtype);
bool dtype_is_floating(DType dtype);
bool dtype_is_integer(DType dtype);

// bfloat16 storage: the upper 16 bits of an IEEE float. Conversion rounds to nearest even.
struct bf16 {
  std::uint16_t bits = 0;
  bf16() = default;
  explicit bf16(float value);
  explicit operator float() const;
};

template <typename T>
struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::f32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::f64; };
template <> struct dtype_of<bf16> { static constexpr DType value = DType::bf16; };
template <> struct dtype_of<std::int32_t> { static constexpr DType value = DType::i32; };
template <> struct dtype_of<std::int64_t> { static constexpr DType value = DType::i64; };
template <> struct dtype_of<std::uint8_t> { static constexpr DType value = DType::u8; };
template <typename T>
inline constexpr DType dtype_of_v = dtype_of<T>::value;

}  // namespace attnlab
