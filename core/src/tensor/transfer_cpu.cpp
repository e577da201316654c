#include <cstring>

#include "cpu/convert_bf16.h"
#include "cpu/parallel.h"
#include "tensor/transfer.h"

namespace attnlab::detail {
namespace {

template <typename Fn>
void visit_dtype(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::f32: return fn(float{});
    case DType::f64: return fn(double{});
    case DType::bf16: return fn(bf16{});
    case DType::i32: return fn(std::int32_t{});
    case DType::i64: return fn(std::int64_t{});
    case DType::u8: return fn(std::uint8_t{});
  }
}

template <typename To, typename From>
To convert_value(From v) {
  if constexpr (std::is_same_v<From, bf16>) {
    return convert_value<To>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bf16>) {
    return bf16(static_cast<float>(v));
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace

void fill_cpu(void* dst, DType dtype, std::int64_t n, double value) {
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    const T v = convert_value<T>(value);
    T* out = static_cast<T*>(dst);
    cpu::parallel_for(n, cpu::kElementwiseGrain, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i) out[i] = v;
    });
  });
}

void convert_cpu(void* dst, DType dst_dtype, const void* src, DType src_dtype, std::int64_t n) {
  if (dst_dtype == src_dtype) {
    std::memcpy(dst, src, static_cast<std::size_t>(n) * dtype_size(dst_dtype));
    return;
  }
  // f32 <-> bf16, the conversions of bf16 precision, through the vectorized loops.
  if (src_dtype == DType::f32 && dst_dtype == DType::bf16) {
    const auto* in = static_cast<const float*>(src);
    auto* out = static_cast<std::uint16_t*>(dst);
    cpu::parallel_for(n, cpu::kElementwiseGrain,
                      [&](std::int64_t b, std::int64_t e) { cpu::f32_to_bf16(in + b, out + b, e - b); });
    return;
  }
  if (src_dtype == DType::bf16 && dst_dtype == DType::f32) {
    const auto* in = static_cast<const std::uint16_t*>(src);
    auto* out = static_cast<float*>(dst);
    cpu::parallel_for(n, cpu::kElementwiseGrain,
                      [&](std::int64_t b, std::int64_t e) { cpu::bf16_to_f32(in + b, out + b, e - b); });
    return;
  }
  visit_dtype(dst_dtype, [&](auto dst_tag) {
    visit_dtype(src_dtype, [&](auto src_tag) {
      using To = decltype(dst_tag);
      using From = decltype(src_tag);
      To* out = static_cast<To*>(dst);
      const From* in = static_cast<const From*>(src);
      cpu::parallel_for(n, cpu::kElementwiseGrain, [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t i = b; i < e; ++i) out[i] = convert_value<To>(in[i]);
      });
    });
  });
}

}  // namespace attnlab::detail
