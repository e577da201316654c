#include "device/index_check_log.h"

#include <fmt/format.h>

#include "attnlab/error.h"
#include "device/index_check.h"

namespace attnlab {
namespace {

// A recorded value; the two clamped ends stand for everything beyond int32.
std::string value_text(std::int64_t v) {
  if (v == index_check::kValueMax) return fmt::format("{} or more", v);
  if (v == index_check::kValueMin) return fmt::format("{} or less", v);
  return fmt::format("{}", v);
}

}  // namespace

IndexCheckLog::IndexCheckLog(std::size_t slots) : slots_(slots) {
  ATTNLAB_CHECK(slots > 0, "IndexCheckLog: needs at least one slot");
  checks_.reserve(slots);
}

std::optional<std::size_t> IndexCheckLog::reserve(IndexCheck check) {
  if (checks_.size() == slots_) return std::nullopt;
  checks_.push_back(std::move(check));
  return checks_.size() - 1;
}

std::optional<std::string> IndexCheckLog::collect(std::span<const std::uint64_t> records, const std::string& device) {
  ATTNLAB_CHECK(records.size() == checks_.size(), "IndexCheckLog: {} records read back for {} pending checks",
                records.size(), checks_.size());
  std::optional<std::string> message;
  std::size_t later = 0;
  for (std::size_t i = 0; i < records.size(); ++i) {
    if (records[i] == index_check::kClean) continue;
    if (message) {
      ++later;
      continue;
    }
    const IndexCheck& c = checks_[i];
    if (!c.message.empty()) {
      message = fmt::format("{}: {}", c.op, c.message);
      continue;
    }
    message = fmt::format("{}: {} {} at position {} is out of range {}", c.op, c.noun,
                          value_text(index_check::key_value(records[i])), index_check::key_position(records[i]),
                          c.rule);
  }
  checks_.clear();
  if (!message) return std::nullopt;
  std::string tail =
      fmt::format(" (checked on {} by the op's kernel and reported at the host's next wait for it", device);
  if (later > 0)
    tail += fmt::format("; {} later call{} failed {} check too", later, later == 1 ? "" : "s",
                        later == 1 ? "its" : "their");
  return *message + tail + ")";
}

}  // namespace attnlab
