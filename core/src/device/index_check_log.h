#pragma once
// The host side of the index checks of a device (index_check.h): which op call owns each record
// word, and the error message when a word comes back with a bad index in it. Backend-neutral (it
// never touches device memory), so it is unit-tested on the host; the CUDA context owns one per
// device, with the words themselves in device memory and a pinned copy they are read back into.
//
// Records are handed out in order, slots 0, 1, 2, ... since the last collect(); the owner reads
// the first pending() words back at its next wait for the device and passes them to collect(),
// which forgets them. Not thread-safe: the owner locks.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace attnlab {

// One op call's check: "{op}: {noun} {value} at position {p} is out of range {rule}". A check of
// one condition whose key says nothing more (gradient_clip's finite norm) sets `message` instead:
// "{op}: {message}" whatever key the kernel recorded.
struct IndexCheck {
  std::string op;       // "embedding"
  std::string noun;     // "id"
  std::string rule;     // "for vocabulary size V = 5 (ids must be in [0, 5))"
  std::string message;  // when set, the whole error after "{op}: "
};

class IndexCheckLog {
 public:
  explicit IndexCheckLog(std::size_t slots);

  std::size_t slots() const { return slots_; }
  // Records reserved since the last collect().
  std::size_t pending() const { return checks_.size(); }
  // The slot of one more check; nullopt when all slots are pending (collect first).
  std::optional<std::size_t> reserve(IndexCheck check);
  // `records` holds the words of the pending slots, as the device left them. Forgets every pending
  // check and returns the error message of the first one (in reservation order) that found a bad
  // index, naming `device`, and how many later ones did too; nullopt when all were clean.
  std::optional<std::string> collect(std::span<const std::uint64_t> records, const std::string& device);

 private:
  std::size_t slots_;
  std::vector<IndexCheck> checks_;
};

}  // namespace attnlab
