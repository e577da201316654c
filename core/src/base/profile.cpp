#include "attnlab/profile.h"

#include <fmt/format.h>

#include "attnlab/env.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>

namespace attnlab::profile {
namespace {

struct State {
  std::mutex mutex;
  std::optional<bool> on;
  std::map<std::string, Entry, std::less<>> ops;
};

State& state() {
  static State s;
  return s;
}

using Clock = std::chrono::steady_clock;
thread_local std::optional<Clock::time_point> t_forward_clock;

}  // namespace

bool enabled() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.on) {
    s.on = env::flag("ATTNLAB_PROFILE");
  }
  return *s.on;
}

void set_enabled(bool on) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.on = on;
}

void add(std::string_view op, double seconds) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  auto it = s.ops.find(op);
  if (it == s.ops.end()) it = s.ops.emplace(std::string(op), Entry{std::string(op), 0, 0.0}).first;
  ++it->second.calls;
  it->second.seconds += seconds;
}

void mark() { t_forward_clock = Clock::now(); }
bool marked() { return t_forward_clock.has_value(); }
void unmark() { t_forward_clock.reset(); }

void forward_op(std::string_view op) {
  if (!t_forward_clock) return;
  const Clock::time_point now = Clock::now();
  add(fmt::format("fwd {}", op), std::chrono::duration<double>(now - *t_forward_clock).count());
  t_forward_clock = now;
}

std::vector<Entry> entries() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  std::vector<Entry> out;
  for (const auto& [name, e] : s.ops) out.push_back(e);
  std::stable_sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.seconds > b.seconds; });
  return out;
}

void reset() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.ops.clear();
}

std::string table(double per) {
  const std::vector<Entry> all = entries();
  double total = 0;
  for (const Entry& e : all) total += e.seconds;
  std::string out = "| op | calls | ms | share |\n|---|---:|---:|---:|\n";
  for (const Entry& e : all)
    out += fmt::format("| {} | {:.0f} | {:.2f} | {:.1f} % |\n", e.op, static_cast<double>(e.calls) / per,
                       1000.0 * e.seconds / per, total > 0 ? 100.0 * e.seconds / total : 0.0);
  out += fmt::format("| total | | {:.2f} | 100 % |\n", 1000.0 * total / per);
  return out;
}

}  // namespace attnlab::profile
