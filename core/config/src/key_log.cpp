#include "attnlab/config/key_log.h"

#include <algorithm>

namespace attnlab::config {
namespace {
thread_local KeyLog* active = nullptr;
}  // namespace

KeyLog::KeyLog() : outer_(active) { active = this; }
KeyLog::~KeyLog() { active = outer_; }

bool KeyLog::recording() { return active != nullptr; }

void KeyLog::note(const std::string& path, const std::string& type, const std::string& default_value) {
  if (!active) return;
  auto& records = active->records_;
  auto it = std::find_if(records.begin(), records.end(), [&](const KeyRecord& r) { return r.path == path; });
  if (it == records.end()) {
    records.push_back({path, type, default_value});
  } else if (it->type.empty() && !type.empty()) {
    it->type = type;
    it->default_value = default_value;
  }
}

}  // namespace attnlab::config
