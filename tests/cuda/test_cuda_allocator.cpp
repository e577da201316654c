// The caching allocator on a CUDA device: freed blocks are reused without new cudaMalloc calls,
// reuse while kernels are still queued is safe (one stream per device), empty_cache returns the
// cache, and an impossible allocation fails with a clear error after which the device still works.
// Skipped without a CUDA device.
#include <doctest/doctest.h>

#include "attnlab/attnlab.h"
#include "attnlab/allocator.h"
#include "memory/caching_allocator.h"
#include "support/cuda_testing.h"
#include "support/tensor_testing.h"

using namespace attnlab;

namespace {

const Device kGpu = Device::cuda(0);

}  // namespace

TEST_CASE("cuda allocator reuses freed blocks and counts them") {
  SKIP_WITHOUT_CUDA();
  if (caching_disabled_by_env()) {
    MESSAGE("ATTNLAB_NO_CACHING_ALLOCATOR is set: nothing is cached, skipped");
    return;
  }
  const AllocatorStats before = memory_stats(kGpu);
  { Tensor t = Tensor::zeros({1000, 1000}, DType::f32, kGpu); }  // 4 MB, freed into the cache
  const AllocatorStats after_first = memory_stats(kGpu);
  CHECK(after_first.bytes_in_use == before.bytes_in_use);
  CHECK(after_first.bytes_cached >= 4000000);
  { Tensor t = Tensor::zeros({1000, 1000}, DType::f32, kGpu); }  // the same block again
  const AllocatorStats after_second = memory_stats(kGpu);
  CHECK(after_second.raw_allocations == after_first.raw_allocations);
  CHECK(after_second.cache_hits == after_first.cache_hits + 1);
  Tensor live = Tensor::zeros({1000}, DType::f32, kGpu);
  CHECK(memory_stats(kGpu).bytes_in_use == before.bytes_in_use + 4000);
  CHECK(allocator_for(kGpu).bytes_in_use() == before.bytes_in_use + 4000);
  empty_cache(kGpu);
  const AllocatorStats emptied = memory_stats(kGpu);
  CHECK(emptied.bytes_cached == 0);
  CHECK(emptied.bytes_reserved < after_second.bytes_reserved);
  CHECK(emptied.raw_frees > after_second.raw_frees);
  CHECK(live.to_vector<float>() == std::vector<float>(1000, 0.0f));  // the live tensor is untouched
}

TEST_CASE("cuda memory freed while kernels are queued is reused in order") {
  SKIP_WITHOUT_CUDA();
  // Many rounds of: a kernel reads x, x is freed at once (its kernel may still be queued), a new
  // tensor of the same size takes x's block and is overwritten. Each y must still see its x.
  std::vector<Tensor> ys;
  for (int round = 0; round < 50; ++round) {
    Tensor y;
    {
      Tensor x = Tensor::full({1 << 18}, static_cast<double>(round), DType::f32, kGpu);
      y = scale(x, 2.0);
    }
    Tensor z = Tensor::full({1 << 18}, -1.0, DType::f32, kGpu);  // likely x's block
    ys.push_back(y);
  }
  for (int round = 0; round < 50; ++round) {
    CAPTURE(round);
    const std::vector<float> v = ys[static_cast<std::size_t>(round)].to_vector<float>();
    CHECK(v.front() == 2.0f * static_cast<float>(round));
    CHECK(v.back() == 2.0f * static_cast<float>(round));
  }
}

TEST_CASE("cuda allocation beyond the device memory is a clear error and leaves the device usable") {
  SKIP_WITHOUT_CUDA();
  // 2^41 bytes (2 TiB): more than any GPU has.
  CHECK_THROWS_WITH_AS(Tensor::empty({std::int64_t{1} << 39}, DType::f32, kGpu),
                       doctest::Contains("cuda:0: out of memory allocating"), Error);
  const Tensor t = Tensor::full({16}, 3.0, DType::f32, kGpu);
  CHECK(t.to_vector<float>() == std::vector<float>(16, 3.0f));
}
