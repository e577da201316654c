// The safetensors reader and writer: round trips, the exact bytes of the spec, every refusal,
// and the atomic file write under them.
#include <doctest/doctest.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "attnlab/nmt/io/atomic_file.h"
#include "attnlab/nmt/io/checksum.h"
#include "attnlab/nmt/io/write_faults.h"
#include "attnlab/nmt/checkpoint/safetensors.h"
#include "nmt/checkpoint_test_util.h"

using namespace attnlab;
using namespace attnlab::nmt;
using namespace attnlab::nmt::testing;  // checkpoint_test_util.h

namespace {

std::vector<unsigned char> host_bytes(const Tensor& t) {
  const auto* p = static_cast<const unsigned char*>(t.raw_data());
  return {p, p + t.nbytes()};
}

// The message read_safetensors throws for the file, or "" when it reads fine.
std::string read_error(const std::filesystem::path& path) {
  return error_of([&] { (void)read_safetensors(path); });
}

}  // namespace

TEST_CASE("safetensors round trip keeps every dtype and shape and the metadata") {
  ScratchDir dir;
  std::vector<NamedTensor> tensors = {
      {"f32.matrix", Tensor::from_vector<float>({2, 3}, {1.5f, -2.f, 3.25f, 0.f, -0.f, 1e30f})},
      {"f64.vector", Tensor::from_vector<double>({4}, {1.0, -1e-300, 3.141592653589793, 2.0})},
      {"bf16", Tensor::from_vector<bf16>({2, 2}, {bf16(1.f), bf16(-2.f), bf16(0.5f), bf16(7.f)})},
      {"i32", Tensor::from_vector<std::int32_t>({3, 1}, {-7, 0, 2147483647})},
      {"i64.scalar", Tensor::from_vector<std::int64_t>(Shape{}, {-9000000000000000000LL})},
      {"u8", Tensor::from_vector<std::uint8_t>({5}, {0, 1, 127, 128, 255})},
      {"empty.f32", Tensor::empty({0, 3}, DType::f32)},
      {"empty.i64", Tensor::empty({0}, DType::i64)},
      {"a.last.one", Tensor::from_vector<float>({1, 1, 1}, {42.f})},
  };
  const std::map<std::string, std::string> metadata = {
      {"format", "pt"}, {"note", "quotes \" and \\ and \xc3\xa9"}, {"empty", ""}};
  const auto path = dir / "all.safetensors";
  write_safetensors(path, tensors, metadata);
  const SafetensorsContent got = read_safetensors(path);
  CHECK(got.metadata == metadata);
  REQUIRE(got.tensors.size() == tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    CAPTURE(tensors[i].name);
    CHECK(got.tensors[i].name == tensors[i].name);  // written order is kept
    CHECK(got.tensors[i].tensor.dtype() == tensors[i].tensor.dtype());
    CHECK(got.tensors[i].tensor.shape() == tensors[i].tensor.shape());
    CHECK(host_bytes(got.tensors[i].tensor) == host_bytes(tensors[i].tensor));
  }
  REQUIRE(got.find("i64.scalar") != nullptr);
  CHECK(got.find("i64.scalar")->rank() == 0);
  CHECK(got.find("missing") == nullptr);
}

TEST_CASE("safetensors without tensors or metadata is still a valid file") {
  ScratchDir dir;
  write_safetensors(dir / "nothing.safetensors", {});
  const auto bytes = read_bytes(dir / "nothing.safetensors");
  CHECK(bytes.size() == 16);  // 8-byte length + "{}" padded to 8
  const auto got = read_safetensors(dir / "nothing.safetensors");
  CHECK(got.tensors.empty());
  CHECK(got.metadata.empty());
}

TEST_CASE("safetensors bytes follow the spec exactly") {
  ScratchDir dir;
  const auto path = dir / "tiny.safetensors";
  write_safetensors(path, {{"x", Tensor::from_vector<float>({2}, {1.f, 2.f})}}, {{"k", "v"}});
  const auto bytes = read_bytes(path);
  REQUIRE(bytes.size() >= 8);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[static_cast<std::size_t>(i)];
  const std::string json =
      R"({"__metadata__":{"k":"v"},"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  CHECK(n % 8 == 0);  // 8 + n is a multiple of 8: the data starts aligned
  CHECK(n == (json.size() + 7) / 8 * 8);
  REQUIRE(bytes.size() == 8 + n + 8);
  const std::string header(bytes.begin() + 8, bytes.begin() + 8 + static_cast<long>(n));
  CHECK(header.substr(0, json.size()) == json);
  CHECK(header.substr(json.size()) == std::string(n - json.size(), ' '));
  const std::vector<unsigned char> data(bytes.begin() + 8 + static_cast<long>(n), bytes.end());
  // 1.0f and 2.0f, little-endian IEEE 754.
  CHECK(data == std::vector<unsigned char>{0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x40});
}

TEST_CASE("safetensors files written by another writer are read") {
  // Unpadded header, keys in another order, offsets listed out of order.
  ScratchDir dir;
  const auto path = dir / "other.safetensors";
  const std::string header =
      R"({"b":{"data_offsets":[2,3],"shape":[1],"dtype":"U8"},"a":{"shape":[1],"dtype":"BF16","data_offsets":[0,2]}})";
  write_bytes(path, raw_safetensors(header, {0x80, 0x3f, 0x07}));
  const auto got = read_safetensors(path);
  REQUIRE(got.tensors.size() == 2);
  CHECK(got.tensors[0].name == "a");  // data-section order
  CHECK(got.tensors[0].tensor.to_vector<float>() == std::vector<float>{1.f});
  CHECK(got.tensors[1].tensor.to_vector<std::int64_t>() == std::vector<std::int64_t>{7});
}

TEST_CASE("safetensors refuses a truncated file") {
  ScratchDir dir;
  const auto path = dir / "t.safetensors";
  write_safetensors(path, {{"x", Tensor::from_vector<float>({4}, {1.f, 2.f, 3.f, 4.f})}});
  auto bytes = read_bytes(path);
  bytes.resize(bytes.size() - 3);
  write_bytes(path, bytes);
  const std::string error = read_error(path);
  CHECK(contains(error, path.string()));
  CHECK(contains(error, "truncated"));
  CHECK(contains(error, "'x'"));

  write_bytes(path, {1, 2, 3});
  CHECK(contains(read_error(path), "truncated"));
  CHECK(contains(read_error(path), "less than the 8-byte header length"));
}

TEST_CASE("safetensors refuses a garbage header length") {
  ScratchDir dir;
  const auto path = dir / "g.safetensors";
  write_bytes(path, raw_safetensors(0xdeadbeefcafef00dULL, "{}", {}));
  const std::string error = read_error(path);
  CHECK(contains(error, path.string()));
  CHECK(contains(error, "header length 16045690984503111693 exceeds"));
}

TEST_CASE("safetensors refuses a header that is not JSON") {
  ScratchDir dir;
  const auto path = dir / "j.safetensors";
  write_bytes(path, raw_safetensors(R"({"x":{"dtype":"F32",)", {}));
  CHECK(contains(read_error(path), "the header is not valid JSON"));
  write_bytes(path, raw_safetensors("[1, 2]  ", {}));
  CHECK(contains(read_error(path), "not an object"));
}

TEST_CASE("safetensors refuses overlapping offsets") {
  ScratchDir dir;
  const auto path = dir / "o.safetensors";
  const std::string header =
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
  write_bytes(path, raw_safetensors(header, std::vector<unsigned char>(12, 0)));
  const std::string error = read_error(path);
  CHECK(contains(error, "tensor 'b' at data_offsets [4, 12] overlaps"));
}

TEST_CASE("safetensors refuses gaps and trailing bytes") {
  ScratchDir dir;
  const auto path = dir / "gap.safetensors";
  write_bytes(path, raw_safetensors(
                        R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[1],"data_offsets":[3,4]}})",
                        {1, 2, 3, 4}));
  CHECK(contains(read_error(path), "has a gap"));
  write_bytes(path, raw_safetensors(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})",
                                    {1, 2, 3}));
  CHECK(contains(read_error(path), "cover 2 bytes but 3 bytes follow the header"));
}

TEST_CASE("safetensors refuses an unknown dtype and a size that does not match the shape") {
  ScratchDir dir;
  const auto path = dir / "d.safetensors";
  write_bytes(path, raw_safetensors(R"({"h":{"dtype":"F16","shape":[1],"data_offsets":[0,2]}})",
                                    {0, 0}));
  CHECK(contains(read_error(path), "tensor 'h': unknown safetensors dtype 'F16'"));
  write_bytes(path, raw_safetensors(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})",
                                    std::vector<unsigned char>(8, 0)));
  CHECK(contains(read_error(path), "tensor 'a' is F32[3] (3 elements of 4 bytes)"));
  write_bytes(path, raw_safetensors(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})",
                                    std::vector<unsigned char>(4, 0)));
  CHECK(contains(read_error(path), "not a non-negative integer"));
  write_bytes(path, raw_safetensors(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})",
                                    std::vector<unsigned char>(4, 0)));
  CHECK(contains(read_error(path), "end before they begin"));
  write_bytes(path, raw_safetensors(R"({"a":{"dtype":"F32","shape":[1]}})", {}));
  CHECK(contains(read_error(path), "exactly dtype, shape and data_offsets"));
  write_bytes(path, raw_safetensors(R"({"__metadata__":{"k":1}})", {}));
  CHECK(contains(read_error(path), "metadata 'k' is a number, not a string"));
}

TEST_CASE("safetensors writer refuses bad names") {
  ScratchDir dir;
  const auto t = Tensor::zeros({1});
  CHECK_THROWS_WITH_AS(write_safetensors(dir / "x.safetensors", {{"a", t}, {"a", t}}),
                       doctest::Contains("duplicate tensor name 'a'"), Error);
  CHECK_THROWS_WITH_AS(write_safetensors(dir / "x.safetensors", {{"__metadata__", t}}),
                       doctest::Contains("reserved"), Error);
  CHECK_THROWS_AS(write_safetensors(dir / "x.safetensors", {{"u", Tensor()}}), Error);
  CHECK_FALSE(std::filesystem::exists(dir / "x.safetensors"));
}

TEST_CASE("write_file_atomically replaces the file and leaves no temporary file") {
  ScratchDir dir;
  const auto path = dir / "f.bin";
  const std::string first = "first version";
  write_file_atomically(path, std::as_bytes(std::span(first.data(), first.size())));
  CHECK(read_bytes(path) == std::vector<unsigned char>(first.begin(), first.end()));
  write_file_atomically(path, [](const ByteSink& sink) {
    sink("ab", 2);
    sink("cd", 2);
  });
  CHECK(read_bytes(path) == std::vector<unsigned char>{'a', 'b', 'c', 'd'});
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    CHECK_FALSE(is_atomic_temp_file(e.path()));
    ++files;
  }
  CHECK(files == 1);
}

TEST_CASE("write_file_atomically leaves the old file when the writer fails") {
  ScratchDir dir;
  const auto path = dir / "f.bin";
  write_file_atomically(path, [](const ByteSink& sink) { sink("old", 3); });
  CHECK_THROWS_WITH_AS(write_file_atomically(path,
                                             [](const ByteSink& sink) {
                                               sink("new new new", 11);
                                               throw Error("writer gave up");
                                             }),
                       "writer gave up", Error);
  CHECK(read_bytes(path) == std::vector<unsigned char>{'o', 'l', 'd'});
  int files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++files;
  CHECK(files == 1);
  CHECK_THROWS_WITH_AS(write_file_atomically(dir / "no/such/folder/f.bin",
                                             [](const ByteSink&) {}),
                       doctest::Contains("cannot create the temporary file"), Error);
}

// ATTNLAB_FAULT_WRITE for the duration of a scope.
struct FaultWrite {
  explicit FaultWrite(const char* spec) { ::setenv("ATTNLAB_FAULT_WRITE", spec, 1); }
  ~FaultWrite() { ::unsetenv("ATTNLAB_FAULT_WRITE"); }
};

TEST_CASE("a full disk during an atomic write names the file and errno and leaves the old file") {
  ScratchDir dir;
  const auto path = dir / "step-00000040.safetensors";
  write_file_atomically(path, [](const ByteSink& sink) { sink("old", 3); });
  {
    const FaultWrite fault("step-00000040:ENOSPC:4");  // the first 4 bytes go through, then no space
    CHECK_THROWS_WITH_AS(write_file_atomically(path,
                                               [](const ByteSink& sink) {
                                                 sink("new ", 4);
                                                 sink("version", 7);
                                               }),
                         doctest::Contains(fmt::format("writing '{}' failed: No space left on device (ENOSPC, errno "
                                                       "28); the file is unchanged",
                                                       path.string())
                                               .c_str()),
                         Error);
    // Other files are written as usual.
    write_file_atomically(dir / "other.json", [](const ByteSink& sink) { sink("{}", 2); });
  }
  CHECK(read_bytes(path) == std::vector<unsigned char>{'o', 'l', 'd'});
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    CHECK_FALSE(is_atomic_temp_file(e.path()));
    ++files;
  }
  CHECK(files == 2);
  {
    const FaultWrite fault("step-00000040:EIO");
    CHECK_THROWS_WITH_AS(write_file_atomically(path, [](const ByteSink& sink) { sink("x", 1); }),
                         doctest::Contains("Input/output error (EIO, errno 5)"), Error);
  }
  {
    const FaultWrite fault("step-00000040:ENOMEM");
    CHECK_THROWS_WITH_AS(write_file_atomically(path, [](const ByteSink& sink) { sink("x", 1); }),
                         doctest::Contains("ERROR must be ENOSPC, EDQUOT, EIO, EROFS or EACCES"), Error);
  }
  CHECK(describe_errno(ENOSPC) == "No space left on device (ENOSPC, errno 28)");
}

TEST_CASE("temporary names of atomic writes are recognised") {
  const auto temp = atomic_temp_path("/run/checkpoints/step-00000100.safetensors");
  CHECK(temp.parent_path() == "/run/checkpoints");
  CHECK(temp.filename().string().starts_with(".step-00000100.safetensors.tmp-"));
  CHECK(is_atomic_temp_file(temp));
  CHECK_FALSE(is_atomic_temp_file("/run/checkpoints/step-00000100.safetensors"));
}

TEST_CASE("xxh3 checksums match the reference values") {
  // XXH3-64 with seed 0 of "" is 0x2d06800538d394c2 (xxHash reference).
  CHECK(xxh3_64_string(nullptr, 0) == "xxh3-64:2d06800538d394c2");
  Xxh3Hasher hasher;
  hasher.update("hello ", 6);
  hasher.update("world", 5);
  CHECK(hasher.digest_string() == xxh3_64_string("hello world", 11));
}
