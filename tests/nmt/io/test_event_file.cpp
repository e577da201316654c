// TensorBoard event files: CRC-32C against its published check value, the TFRecord framing byte by
// byte, and a written file read back record by record.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "attnlab/error.h"
#include "attnlab/nmt/io/event_file.h"

using namespace attnlab::nmt;
namespace fs = std::filesystem;

namespace {

std::span<const std::byte> bytes(std::string_view s) { return std::as_bytes(std::span<const char>(s.data(), s.size())); }

std::uint64_t le(std::string_view s, std::size_t at, int n) {
  std::uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= static_cast<std::uint64_t>(static_cast<unsigned char>(s[at + i])) << (8 * i);
  return v;
}

}  // namespace

TEST_CASE("CRC-32C has its check value and TFRecord masks it") {
  CHECK(crc32c(bytes("123456789")) == 0xE3069283u);  // the Castagnoli polynomial's check value
  CHECK(crc32c(bytes("")) == 0u);
  const std::uint32_t c = crc32c(bytes("attnlab"));
  CHECK(masked_crc32c(bytes("attnlab")) == static_cast<std::uint32_t>(((c >> 15) | (c << 17)) + 0xa282ead8u));
}

TEST_CASE("a TFRecord is length, its masked CRC, the payload and the payload's masked CRC") {
  const std::string payload = "event bytes";
  const std::string r = tfrecord(payload);
  REQUIRE(r.size() == 8 + 4 + payload.size() + 4);
  CHECK(le(r, 0, 8) == payload.size());
  CHECK(le(r, 8, 4) == masked_crc32c(bytes(std::string_view(r).substr(0, 8))));
  CHECK(r.substr(12, payload.size()) == payload);
  CHECK(le(r, 12 + payload.size(), 4) == masked_crc32c(bytes(payload)));
}

TEST_CASE("an event file holds the version record, a restart marker and one record per scalar") {
  const fs::path dir = fs::temp_directory_path() / fmt::format("attnlab-events-{}", ::getpid());
  fs::remove_all(dir);
  if (!event_files_built()) {
    MESSAGE("built without protobuf: event files are refused, the rest of this test is skipped");
    CHECK_THROWS_AS(EventFileWriter(dir.string(), "test"), attnlab::Error);
    return;
  }
  std::string path;
  {
    EventFileWriter w(dir.string(), "test", 40);
    w.scalar("train/loss", 41, 2.5);
    w.scalar("train/loss", 42, 2.25);
    path = w.path();
  }
  CHECK(fs::path(path).filename().string().starts_with("events.out.tfevents."));
  CHECK(fs::path(path).filename().string().ends_with(".test"));
  std::ifstream in(path, std::ios::binary);
  const std::string file((std::istreambuf_iterator<char>(in)), {});
  std::size_t at = 0, records = 0;
  while (at < file.size()) {
    REQUIRE(at + 12 <= file.size());
    const std::uint64_t n = le(file, at, 8);
    CHECK(le(file, at + 8, 4) == masked_crc32c(bytes(std::string_view(file).substr(at, 8))));
    REQUIRE(at + 12 + n + 4 <= file.size());
    CHECK(le(file, at + 12 + n, 4) == masked_crc32c(bytes(std::string_view(file).substr(at + 12, n))));
    if (records == 0) CHECK(std::string_view(file).substr(at + 12, n).find("brain.Event:2") != std::string::npos);
    if (records == 3) CHECK(std::string_view(file).substr(at + 12, n).find("train/loss") != std::string::npos);
    at += 12 + n + 4;
    ++records;
  }
  CHECK(records == 4);  // version, restart, two scalars
  fs::remove_all(dir);
}
