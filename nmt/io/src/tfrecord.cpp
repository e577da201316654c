// The TFRecord framing of event files (event_file.h): CRC-32C, its masking, one record. Needs no protobuf.
#include <boost/crc.hpp>

#include "attnlab/nmt/io/event_file.h"

namespace attnlab::nmt {
namespace {

void put_le(std::string& out, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

std::span<const std::byte> bytes_of(std::string_view s) { return std::as_bytes(std::span<const char>(s.data(), s.size())); }

}  // namespace

std::uint32_t crc32c(std::span<const std::byte> data) {
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
  crc.process_bytes(data.data(), data.size());
  return crc.checksum();
}

std::uint32_t masked_crc32c(std::span<const std::byte> data) {
  const std::uint32_t c = crc32c(data);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

std::string tfrecord(std::string_view payload) {
  std::string length;
  put_le(length, payload.size(), 8);
  std::string out = length;
  put_le(out, masked_crc32c(bytes_of(length)), 4);
  out.append(payload);
  put_le(out, masked_crc32c(bytes_of(payload)), 4);
  return out;
}

}  // namespace attnlab::nmt
