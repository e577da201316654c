// TensorBoard event files through the protoc-generated Event message (builds with protobuf).
#include "attnlab/nmt/io/event_file.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>

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

tensorboard::Event event_at(std::int64_t step) {
  tensorboard::Event e;
  e.set_wall_time(now_seconds());
  e.set_step(step);
  return e;
}

}  // namespace

bool event_files_built() { return true; }

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
