#pragma once
// Content checksums for checkpoints: XXH3-64, written as "xxh3-64:<16 lowercase hex digits>".
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace attnlab::nmt {

// Streaming XXH3-64 (seed 0): update() with consecutive chunks, then digest().
class Xxh3Hasher {
 public:
  Xxh3Hasher();
  ~Xxh3Hasher();
  Xxh3Hasher(const Xxh3Hasher&) = delete;
  Xxh3Hasher& operator=(const Xxh3Hasher&) = delete;
  void update(const void* data, std::size_t size);
  std::uint64_t digest() const;
  std::string digest_string() const;  // "xxh3-64:..."

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// "xxh3-64:<hex>" of a value returned by digest().
std::string format_xxh3_64(std::uint64_t digest);
std::string xxh3_64_string(const void* data, std::size_t size);

}  // namespace attnlab::nmt
