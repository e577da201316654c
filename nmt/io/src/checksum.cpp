#include "attnlab/nmt/io/checksum.h"

#include <xxhash.h>

#include <fmt/format.h>

#include "attnlab/error.h"

namespace attnlab::nmt {

struct Xxh3Hasher::State {
  XXH3_state_t* xxh = nullptr;
};

Xxh3Hasher::Xxh3Hasher() : state_(std::make_unique<State>()) {
  state_->xxh = XXH3_createState();
  ATTNLAB_CHECK(state_->xxh != nullptr, "xxh3: out of memory creating a hash state");
  XXH3_64bits_reset(state_->xxh);
}

Xxh3Hasher::~Xxh3Hasher() { XXH3_freeState(state_->xxh); }

void Xxh3Hasher::update(const void* data, std::size_t size) {
  if (size != 0) XXH3_64bits_update(state_->xxh, data, size);
}

std::uint64_t Xxh3Hasher::digest() const { return XXH3_64bits_digest(state_->xxh); }

std::string Xxh3Hasher::digest_string() const { return format_xxh3_64(digest()); }

std::string format_xxh3_64(std::uint64_t digest) { return fmt::format("xxh3-64:{:016x}", digest); }

std::string xxh3_64_string(const void* data, std::size_t size) {
  return format_xxh3_64(XXH3_64bits(size == 0 ? "" : data, size));
}

}  // namespace attnlab::nmt
