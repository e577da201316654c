// The vectorized f32 <-> bf16 conversions (cpu/convert_bf16.h) against bf16's scalar constructor
// and conversion (the loops, their instruction-set clones and the rounding rule they share), the
// rounding rule itself against known values, and both through Tensor::to.
#include <doctest/doctest.h>

#include <bit>
#include <cstdint>
#include <limits>
#include <vector>

#include "attnlab/tensor.h"
#include "cpu/convert_bf16.h"

using namespace attnlab;

namespace {

std::uint16_t scalar_bits(float v) { return bf16(v).bits; }

}  // namespace

TEST_CASE("f32_to_bf16 rounds as bf16(float) for every bf16 value and its rounding cases") {
  // Every upper half (sign, exponent, 7 mantissa bits) with low halves around the rounding
  // boundary: exact, just above, just below and at the tie, and the extremes.
  const std::uint32_t lows[] = {0x0000, 0x0001, 0x3fff, 0x7ffe, 0x7fff, 0x8000, 0x8001, 0xbfff, 0xfffe, 0xffff};
  std::vector<float> in;
  for (std::uint32_t hi = 0; hi < 0x10000; ++hi)
    for (std::uint32_t lo : lows) in.push_back(std::bit_cast<float>(hi << 16 | lo));
  std::vector<std::uint16_t> out(in.size());
  cpu::f32_to_bf16(in.data(), out.data(), static_cast<std::int64_t>(in.size()));
  std::int64_t mismatches = 0;
  std::size_t first = 0;
  for (std::size_t i = 0; i < in.size(); ++i)
    if (out[i] != scalar_bits(in[i]) && mismatches++ == 0) first = i;
  INFO("first mismatch at f32 bits ", std::bit_cast<std::uint32_t>(in[first]));
  CHECK(mismatches == 0);
}

TEST_CASE("f32_to_bf16 known values: ties to even, overflow to infinity, NaNs kept") {
  const float in[] = {1.0f,
                      std::bit_cast<float>(0x3f808000u),  // 1 + 2^-8: a tie, down to the even 1
                      std::bit_cast<float>(0x3f818000u),  // a tie up to the even 0x3f82
                      std::bit_cast<float>(0x3f808001u),  // just above the tie: up
                      -2.5f,
                      std::numeric_limits<float>::max(),  // rounds past the largest bf16
                      std::numeric_limits<float>::infinity(),
                      std::bit_cast<float>(0x7f800001u),  // a signalling NaN: quieted
                      std::bit_cast<float>(0xffc00000u),  // a negative quiet NaN
                      std::bit_cast<float>(0x00000001u)};  // the smallest subnormal: to +0
  const std::uint16_t want[] = {0x3f80, 0x3f80, 0x3f82, 0x3f81, 0xc020, 0x7f80, 0x7f80, 0x7fc0, 0xffc0, 0x0000};
  std::uint16_t out[std::size(in)] = {};
  cpu::f32_to_bf16(in, out, static_cast<std::int64_t>(std::size(in)));
  for (std::size_t i = 0; i < std::size(in); ++i) {
    INFO("value ", i);
    CHECK(out[i] == want[i]);
  }
}

TEST_CASE("bf16_to_f32 widens every bf16 value as float(bf16)") {
  std::vector<std::uint16_t> in(0x10000);
  for (std::uint32_t b = 0; b < 0x10000; ++b) in[b] = static_cast<std::uint16_t>(b);
  std::vector<float> out(in.size());
  cpu::bf16_to_f32(in.data(), out.data(), static_cast<std::int64_t>(in.size()));
  std::int64_t mismatches = 0;
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    bf16 v;
    v.bits = static_cast<std::uint16_t>(b);
    mismatches += std::bit_cast<std::uint32_t>(out[b]) != std::bit_cast<std::uint32_t>(static_cast<float>(v));
  }
  CHECK(mismatches == 0);
  CHECK(out[0x3f80] == 1.0f);
  CHECK(out[0xc020] == -2.5f);
}

TEST_CASE("Tensor::to between f32 and bf16 converts every element, split over the threads") {
  // Long enough for several parallel chunks, with an odd tail.
  const std::int64_t n = 3 * (1 << 15) + 17;
  std::vector<float> values(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    values[i] = std::bit_cast<float>(0x3f800000u + static_cast<std::uint32_t>(i * 977));
  const Tensor x = Tensor::from_vector<float>(Shape{n}, values);
  const Tensor y = x.to(DType::bf16);
  const bf16* yb = y.data<bf16>();
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < n; ++i) wrong += yb[i].bits != scalar_bits(values[i]);
  CHECK(wrong == 0);
  const std::vector<float> back = y.to(DType::f32).to_vector<float>();
  std::int64_t wrong_back = 0;
  for (std::int64_t i = 0; i < n; ++i) wrong_back += back[i] != static_cast<float>(yb[i]);
  CHECK(wrong_back == 0);
}
