// Shapes at the edge of what a tensor can count: an empty tensor whose other extents multiply past
// int64 was accepted, then overflowed Shape::numel (UBSan, through the safetensors fuzzer's harness).
#include <doctest/doctest.h>

#include "attnlab/nmt/checkpoint/safetensors.h"
#include "nmt/checkpoint_test_util.h"

using namespace attnlab;
using namespace attnlab::nmt;
using attnlab::nmt::testing::contains;
using attnlab::nmt::testing::error_of;
using attnlab::nmt::testing::raw_safetensors;
using attnlab::nmt::testing::ScratchDir;
using attnlab::nmt::testing::write_bytes;

TEST_CASE("safetensors refuses an empty tensor whose other extents overflow an element count") {
  ScratchDir dir;
  const auto path = dir / "s.safetensors";
  // 2^32 * (2^31 + 1) > 2^63 - 1 before the 0 makes the tensor empty.
  write_bytes(path, raw_safetensors(R"({"t":{"dtype":"F32","shape":[4294967296,2147483649,0],"data_offsets":[0,0]}})", {}));
  const std::string error = error_of([&] { (void)read_safetensors(path); });
  CHECK(contains(error, "shape [4294967296,2147483649,0] of tensor 't' has more elements than a tensor can hold"));
  write_bytes(path, raw_safetensors(R"({"t":{"dtype":"U8","shape":[9223372036854775808],"data_offsets":[0,0]}})", {}));
  CHECK(contains(error_of([&] { (void)read_safetensors(path); }), "more elements than a tensor can hold"));
}

TEST_CASE("safetensors reads empty tensors whose other extents fit") {
  ScratchDir dir;
  const auto path = dir / "s.safetensors";
  write_bytes(path, raw_safetensors(
      R"({"a":{"dtype":"F32","shape":[2147483648,2147483648,0],"data_offsets":[0,0]},)"
      R"("b":{"dtype":"I64","shape":[0,3],"data_offsets":[0,0]}})", {}));
  const SafetensorsContent content = read_safetensors(path);
  REQUIRE(content.tensors.size() == 2);
  CHECK(content.find("a")->shape() == Shape({2147483648, 2147483648, 0}));
  CHECK(content.find("a")->numel() == 0);
  CHECK(content.find("b")->shape() == Shape({0, 3}));
}
