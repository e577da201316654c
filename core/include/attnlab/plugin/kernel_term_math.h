#pragma once
// The index math of position terms in kernel form (kernel_terms.h), shared by the CPU paths and
// the CUDA kernels of fused attention plugins, so that both compute the same term for a query
// and key position. No fmt and no Tensor: nvcc compiles this file.
#include "attnlab/device_std.h"

#include "attnlab/host_device.h"

namespace attnlab::terms {

// The distance bucket of a key at position j seen from a query at position p, with distances
// clipped at +-clip: clamp(j - p, -clip, clip) + clip, in [0, 2 clip].
ATTNLAB_HOST_DEVICE std::int64_t distance_bucket(std::int64_t p, std::int64_t j, std::int64_t clip) {
  const std::int64_t d = j - p;
  return (d < -clip ? -clip : d > clip ? clip : d) + clip;
}

// The number of distance buckets under `clip`: 2 clip + 1.
ATTNLAB_HOST_DEVICE std::int64_t bucket_count(std::int64_t clip) { return 2 * clip + 1; }

// The keys j0 + first .. j0 + last - 1 of the n keys from j0 on whose bucket from query position
// p is `bucket` (first >= last when there is none): one key for an inner bucket, a run of keys
// for the two clipped ones. Kernels sum a bucket's gradient over these.
ATTNLAB_HOST_DEVICE void bucket_keys(std::int64_t p, std::int64_t bucket, std::int64_t clip, std::int64_t j0,
                                     std::int64_t n, std::int64_t& first, std::int64_t& last) {
  const std::int64_t j = p + bucket - clip;  // the key at exactly this distance
  auto clamp = [n](std::int64_t x) { return x < 0 ? std::int64_t{0} : x > n ? n : x; };
  first = bucket == 0 ? 0 : clamp(j - j0);
  last = bucket == 2 * clip ? n : clamp(j + 1 - j0);
}

// The distance bias of a head with slope m: -m |p - j| (ALiBi).
template <typename T>
ATTNLAB_HOST_DEVICE T distance_bias(T slope, std::int64_t p, std::int64_t j) {
  return -slope * static_cast<T>(p > j ? p - j : j - p);
}

}  // namespace attnlab::terms
