// The cudnn plugin's key lengths kernel on cuda:0 against its CPU reference (key_lengths_reference):
// lengths for every row, and the problem code of a mask that breaks the suffix rule, over batches
// larger than one block's warps and rows longer than a warp. Compiled into the cuda suite in CUDA
// builds; skipped without a device.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <set>
#include <vector>

#include "attnlab/attnlab.h"
#include "key_lengths_cuda.h"
#include "sdpa_inputs.h"

using namespace attnlab;
using namespace attnlab::cudnn_attention;

namespace {

struct DeviceResult {
  std::vector<std::int32_t> seq_len_q, seq_len_kv;
  std::uint64_t problem = kNoMaskProblem;
};

DeviceResult run_kernel(const std::vector<float>& mask, std::int64_t batch, std::int64_t keys, std::int32_t s_q) {
  const Device gpu = Device::cuda(0);
  const Tensor m = Tensor::from_vector<float>({batch, keys}, mask).to(gpu);
  Tensor q = Tensor::full({batch}, -7, DType::i32, gpu), kv = Tensor::full({batch}, -7, DType::i32, gpu);
  Tensor problem = Tensor::full({1}, -1, DType::i64, gpu);  // all bits set: kNoMaskProblem
  const int status = launch_key_lengths(static_cast<const float*>(m.raw_data()), batch, keys, s_q,
                                        static_cast<std::int32_t*>(q.raw_data()), static_cast<std::int32_t*>(kv.raw_data()),
                                        static_cast<std::uint64_t*>(problem.raw_data()), cuda_stream(gpu));
  REQUIRE_MESSAGE(status == 0, key_lengths_error_string(status));
  return {q.to(Device::cpu()).to_vector<std::int32_t>(), kv.to(Device::cpu()).to_vector<std::int32_t>(),
          static_cast<std::uint64_t>(problem.to(Device::cpu()).to_vector<std::int64_t>()[0])};
}

}  // namespace

TEST_CASE("cudnn key lengths kernel matches its cpu reference") {
  if (cuda_device_count() == 0) {
    MESSAGE("no CUDA device: skipped");
    return;
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (std::int64_t keys : {1, 5, 31, 32, 33, 100, 1000}) {
    CAPTURE(keys);
    const std::int64_t batch = 37;  // more rows than the 8 warps of a block
    std::vector<float> mask;
    for (std::int64_t b = 0; b < batch; ++b) {
      const std::int64_t length = 1 + (b * 7919) % keys;  // a real key in every row
      for (std::int64_t j = 0; j < keys; ++j) mask.push_back(j < length ? 0.0f : -inf);
    }
    const KeyLengths want = key_lengths_reference(mask, batch, keys);
    const DeviceResult got = run_kernel(mask, batch, keys, 9);
    CHECK(got.seq_len_kv == want.lengths);
    CHECK(got.seq_len_q == std::vector<std::int32_t>(static_cast<std::size_t>(batch), 9));
    CHECK(got.problem == kNoMaskProblem);

    // One bad row: its code. Several: the code of one of them (each offending warp stores its own).
    std::vector<float> bad = mask;
    bad[static_cast<std::size_t>(20 * keys)] = keys > 1 ? -inf : 0.5f;  // row 20, key 0
    const KeyLengths one = key_lengths_reference(bad, batch, keys);
    REQUIRE(one.first_problem() != kNoMaskProblem);
    const DeviceResult got_one = run_kernel(bad, batch, keys, 9);
    CHECK(got_one.seq_len_kv == one.lengths);
    CHECK(got_one.problem == one.first_problem());
    for (std::int64_t j = 0; j < keys; ++j) bad[static_cast<std::size_t>(3 * keys + j)] = -inf;  // row 3: no key
    bad[static_cast<std::size_t>(30 * keys + keys / 2)] = -1e9f;                                 // row 30
    const KeyLengths several = key_lengths_reference(bad, batch, keys);
    const DeviceResult got_several = run_kernel(bad, batch, keys, 9);
    CHECK(got_several.seq_len_kv == several.lengths);
    const std::set<std::uint64_t> codes(several.problems.begin(), several.problems.end());
    CHECK(got_several.problem != kNoMaskProblem);
    CHECK(codes.count(got_several.problem) == 1);
  }
}
