#include "attnlab/nmt/io/event_file.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>

#include <boost/crc.hpp>

#include "attnlab/error.h"
#include "attnlab/nmt/io/write_faults.h"
#include "io/proto/tensorboard_event.pb.h"

namespace attnlab::nmt {
namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

void put_le(std::string& out, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

std::span<const std::byte> bytes_of(std::string_view s) { return std::as_bytes(std::span<const char>(s.data(), s.size())); }

tensorboard::Event event_at(std::int64_t step) {
  tensorboard::Event e;
  e.set_wall_time(now_seconds());
  e.set_step(step);
  return e;
}

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

EventFileWriter::EventFileWriter(const std::string& dir, const std::string& suffix,
                                 std::optional<std::int64_t> restart_step) {
  std::filesystem::create_directories(dir);
  const auto seconds = static_cast<std::int64_t>(now_seconds());
  path_ = (std::filesystem::path(dir) / fmt::format("events.out.tfevents.{}.{}.{}", seconds, host_name(), suffix)).string();
  out_.open(path_, std::ios::binary | std::ios::app);
  ATTNLAB_CHECK(out_.good(), "cannot create the TensorBoard event file '{}': {}", path_, describe_errno(errno));
  tensorboard::Event version = event_at(0);
  version.set_file_version("brain.Event:2");
  append(version.SerializeAsString());
  if (restart_step) {
    tensorboard::Event start = event_at(*restart_step);
    start.mutable_session_log()->set_status(tensorboard::SessionLog::START);
    append(start.SerializeAsString());
  }
}

void EventFileWriter::scalar(const std::string& tag, std::int64_t step, double value) {
  tensorboard::Event e = event_at(step);
  tensorboard::SummaryValue* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(static_cast<float>(value));
  append(e.SerializeAsString());
}

void EventFileWriter::append(const std::string& event) {
  errno = 0;
  out_ << tfrecord(event);
  out_.flush();
  ATTNLAB_CHECK(out_.good(), "writing the TensorBoard event file '{}' failed: {}", path_,
                describe_errno(errno != 0 ? errno : EIO));
}

}  // namespace attnlab::nmt
