// XXH3-128 content hashes as lowercase hex.
#include "attnlab/nmt/io/hash.h"

#include <xxhash.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "attnlab/error.h"

namespace attnlab::nmt {
namespace {

std::string to_hex(XXH128_hash_t hash) {
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, hash);
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(2 * sizeof(canonical.digest), '0');
  for (std::size_t i = 0; i < sizeof(canonical.digest); ++i) {
    out[2 * i] = kDigits[canonical.digest[i] >> 4];
    out[2 * i + 1] = kDigits[canonical.digest[i] & 0xF];
  }
  return out;
}

struct StateDeleter {
  void operator()(XXH3_state_t* state) const { XXH3_freeState(state); }
};
struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};

}  // namespace

std::string hash_bytes(std::string_view bytes) {
  return to_hex(XXH3_128bits(bytes.data(), bytes.size()));
}

std::string hash_file(const std::string& path) {
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  ATTNLAB_CHECK(file != nullptr, "hash_file: cannot open '{}': {}", path, std::strerror(errno));
  std::unique_ptr<XXH3_state_t, StateDeleter> state(XXH3_createState());
  ATTNLAB_CHECK(state != nullptr, "hash_file: out of memory");
  XXH3_128bits_reset(state.get());
  std::vector<char> buffer(1 << 20);
  while (true) {
    const std::size_t got = std::fread(buffer.data(), 1, buffer.size(), file.get());
    if (got > 0) XXH3_128bits_update(state.get(), buffer.data(), got);
    if (got < buffer.size()) {
      ATTNLAB_CHECK(!std::ferror(file.get()), "hash_file: error reading '{}': {}", path,
                    std::strerror(errno));
      break;
    }
  }
  return to_hex(XXH3_128bits_digest(state.get()));
}

std::string hash_files(const std::vector<std::string>& paths, std::string_view settings) {
  // Unambiguous framing: each part is tagged and the settings are length-prefixed.
  std::string key = "attnlab.hash_files.v1\n";
  for (const std::string& path : paths) key += "file " + hash_file(path) + "\n";
  key += fmt::format("settings {}\n", settings.size());
  key.append(settings);
  return hash_bytes(key);
}

}  // namespace attnlab::nmt
