#pragma once
// TensorBoard event files, so that `tensorboard --logdir runs/` plots a run's curves:
// DIR/events.out.tfevents.<unix seconds>.<host>.<suffix>, a TFRecord file of Event messages
// (nmt/io/proto/tensorboard_event.proto). Each record is
//   uint64 length | uint32 masked_crc32c(length) | payload | uint32 masked_crc32c(payload)
// (little-endian), with masked_crc32c(x) = ((c >> 15) | (c << 17)) + 0xa282ead8 for c the
// CRC-32C (Castagnoli) of x. The first record holds the file version "brain.Event:2".
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace attnlab::nmt {

// CRC-32C (Castagnoli polynomial 0x1EDC6F41, reflected) of `data`, and its TFRecord masking.
std::uint32_t crc32c(std::span<const std::byte> data);
std::uint32_t masked_crc32c(std::span<const std::byte> data);

// One TFRecord: the framing above around `payload`.
std::string tfrecord(std::string_view payload);

// Whether this build writes event files (it needs protobuf; without it the writer refuses, naming
// the packages, and training and evaluation write metrics.jsonl and their records only).
bool event_files_built();

class EventFileWriter {
 public:
  // Creates a new event file in `dir` (made if missing). With `restart_step`, its first event
  // after the version is a SessionLog START at that step: TensorBoard then drops the events of
  // earlier files at later steps (what an interrupted run logged after its last checkpoint).
  EventFileWriter(const std::string& dir, const std::string& suffix, std::optional<std::int64_t> restart_step = {});
  // Appends one scalar (a Summary with one simple_value) and flushes it. An Error names the file
  // when the write fails.
  void scalar(const std::string& tag, std::int64_t step, double value);
  const std::string& path() const { return path_; }

 private:
  void append(const std::string& event);
  std::string path_;
  std::ofstream out_;
};

}  // namespace attnlab::nmt
