// Encoded corpus and its checksummed binary cache.
#include "attnlab/nmt/data/encoded.h"

#include <xxhash.h>

#include <bit>
#include <cstring>
#include <filesystem>

#include "attnlab/error.h"
#include "attnlab/nmt/io/hash.h"
#include "attnlab/nmt/io/file_util.h"

namespace attnlab::nmt {
namespace {

static_assert(std::endian::native == std::endian::little, "the encoded cache format is little-endian");

constexpr char kMagic[8] = {'A', 'T', 'L', 'N', 'E', 'N', 'C', '\0'};
constexpr std::uint32_t kVersion = 1;
constexpr std::size_t kKeySize = 32;
constexpr std::size_t kHeaderSize = 96;

struct Header {
  char magic[8];
  std::uint32_t version;
  std::uint32_t reserved;
  char key[kKeySize];
  std::uint64_t pairs;
  std::uint64_t src_ids;
  std::uint64_t tgt_ids;
  std::uint64_t payload_bytes;
  unsigned char checksum[16];
};
static_assert(sizeof(Header) == kHeaderSize, "Header must have no padding");

template <typename T>
std::string_view bytes_of(const std::vector<T>& v) {
  return {reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T)};
}

}  // namespace

void EncodedCorpus::add(std::span<const std::int32_t> src, std::span<const std::int32_t> tgt) {
  src_ids_.insert(src_ids_.end(), src.begin(), src.end());
  tgt_ids_.insert(tgt_ids_.end(), tgt.begin(), tgt.end());
  src_offsets_.push_back(src_ids_.size());
  tgt_offsets_.push_back(tgt_ids_.size());
}

EncodedCorpus EncodedCorpus::encode(const ParallelCorpus& corpus, const Vocabulary& vocab) {
  ATTNLAB_CHECK(corpus.src.size() == corpus.tgt.size(),
                "EncodedCorpus::encode: source has {} segments but target has {}", corpus.src.size(),
                corpus.tgt.size());
  const auto n = static_cast<std::int64_t>(corpus.size());
  std::vector<std::vector<std::int32_t>> src(corpus.size()), tgt(corpus.size());
  std::string error;
#pragma omp parallel for schedule(dynamic, 512)
  for (std::int64_t i = 0; i < n; ++i) {
    try {
      src[static_cast<std::size_t>(i)] = vocab.encode(corpus.src[static_cast<std::size_t>(i)]);
      tgt[static_cast<std::size_t>(i)] = vocab.encode(corpus.tgt[static_cast<std::size_t>(i)]);
    } catch (const std::exception& e) {
#pragma omp critical(attnlab_nmt_encode_error)
      if (error.empty()) error = fmt::format("pair {}: {}", i + 1, e.what());
    }
  }
  ATTNLAB_CHECK(error.empty(), "EncodedCorpus::encode: {}", error);
  EncodedCorpus out;
  std::size_t src_total = 0, tgt_total = 0;
  for (std::size_t i = 0; i < src.size(); ++i) src_total += src[i].size(), tgt_total += tgt[i].size();
  out.src_ids_.reserve(src_total);
  out.tgt_ids_.reserve(tgt_total);
  out.src_offsets_.reserve(src.size() + 1);
  out.tgt_offsets_.reserve(src.size() + 1);
  for (std::size_t i = 0; i < src.size(); ++i) out.add(src[i], tgt[i]);
  return out;
}

void EncodedCorpus::save(const std::string& path, const std::string& key) const {
  ATTNLAB_CHECK(key.size() == kKeySize, "EncodedCorpus::save: the key must be {} hex digits, got '{}'",
                kKeySize, key);
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof(kMagic));
  h.version = kVersion;
  std::memcpy(h.key, key.data(), kKeySize);
  h.pairs = size();
  h.src_ids = src_ids_.size();
  h.tgt_ids = tgt_ids_.size();
  const std::string_view payload[] = {bytes_of(src_offsets_), bytes_of(tgt_offsets_), bytes_of(src_ids_),
                                      bytes_of(tgt_ids_)};
  XXH3_state_t* state = XXH3_createState();
  ATTNLAB_CHECK(state != nullptr, "EncodedCorpus::save: out of memory");
  XXH3_128bits_reset(state);
  for (const auto part : payload) {
    XXH3_128bits_update(state, part.data(), part.size());
    h.payload_bytes += part.size();
  }
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, XXH3_128bits_digest(state));
  XXH3_freeState(state);
  std::memcpy(h.checksum, canonical.digest, sizeof(h.checksum));
  const std::string_view parts[] = {{reinterpret_cast<const char*>(&h), sizeof(h)}, payload[0], payload[1],
                                    payload[2], payload[3]};
  detail::write_file_atomic(path, parts);
}

std::optional<EncodedCorpus> EncodedCorpus::load(const std::string& path, const std::string& key,
                                                 std::string* why) {
  auto fail = [&](std::string reason) -> std::optional<EncodedCorpus> {
    if (why != nullptr) *why = fmt::format("encoded cache '{}': {}", path, reason);
    return std::nullopt;
  };
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return fail("missing");
  std::string bytes;
  try {
    bytes = detail::read_file_bytes(path, "encoded cache");
  } catch (const Error& e) {
    return fail(e.what());
  }
  if (bytes.size() < kHeaderSize) return fail(fmt::format("truncated: {} bytes, shorter than the header", bytes.size()));
  Header h;
  std::memcpy(&h, bytes.data(), kHeaderSize);
  if (std::memcmp(h.magic, kMagic, sizeof(kMagic)) != 0) return fail("bad magic (not an encoded cache)");
  if (h.version != kVersion) return fail(fmt::format("format version {}, expected {}", h.version, kVersion));
  if (std::string_view(h.key, kKeySize) != key)
    return fail(fmt::format("key {} does not match {}", std::string_view(h.key, kKeySize), key));
  // Sizes first (with overflow-safe arithmetic), then the checksum, then the offsets.
  constexpr std::uint64_t kLimit = std::uint64_t{1} << 60;
  if (h.pairs >= kLimit || h.src_ids >= kLimit || h.tgt_ids >= kLimit) return fail("implausible counts");
  const std::uint64_t expected_payload = 2 * (h.pairs + 1) * 8 + (h.src_ids + h.tgt_ids) * 4;
  if (h.payload_bytes != expected_payload)
    return fail(fmt::format("payload size {} disagrees with the counts ({})", h.payload_bytes, expected_payload));
  if (bytes.size() != kHeaderSize + h.payload_bytes)
    return fail(fmt::format("{} bytes, expected {} (truncated or padded)", bytes.size(), kHeaderSize + h.payload_bytes));
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, XXH3_128bits(bytes.data() + kHeaderSize, h.payload_bytes));
  if (std::memcmp(canonical.digest, h.checksum, sizeof(h.checksum)) != 0) return fail("checksum mismatch (corrupted)");

  EncodedCorpus out;
  const char* p = bytes.data() + kHeaderSize;
  auto take = [&p](auto& vec, std::uint64_t count) {
    using T = typename std::remove_reference_t<decltype(vec)>::value_type;
    vec.resize(count);
    std::memcpy(vec.data(), p, count * sizeof(T));
    p += count * sizeof(T);
  };
  take(out.src_offsets_, h.pairs + 1);
  take(out.tgt_offsets_, h.pairs + 1);
  take(out.src_ids_, h.src_ids);
  take(out.tgt_ids_, h.tgt_ids);
  auto offsets_ok = [](const std::vector<std::uint64_t>& off, std::uint64_t total) {
    if (off.front() != 0 || off.back() != total) return false;
    for (std::size_t i = 1; i < off.size(); ++i)
      if (off[i] < off[i - 1]) return false;
    return true;
  };
  if (!offsets_ok(out.src_offsets_, h.src_ids) || !offsets_ok(out.tgt_offsets_, h.tgt_ids))
    return fail("inconsistent offsets");
  return out;
}

std::string encoded_cache_key(const std::string& corpus_key, const Vocabulary& vocab) {
  return hash_bytes(fmt::format("attnlab.encoded.v{}\ncorpus {}\nvocab {}\n", kVersion, corpus_key,
                                vocab.model_hash()));
}

EncodedCorpus load_or_encode(const std::string& cache_dir, const std::string& corpus_key,
                             const Vocabulary& vocab, const std::function<ParallelCorpus()>& read_corpus,
                             EncodedCacheInfo* info) {
  const std::string key = encoded_cache_key(corpus_key, vocab);
  const std::string path = (std::filesystem::path(cache_dir) / ("enc-" + key + ".bin")).string();
  EncodedCacheInfo local;
  EncodedCacheInfo& out = info != nullptr ? *info : local;
  out = EncodedCacheInfo{};
  out.path = path;
  std::string why;
  if (auto cached = EncodedCorpus::load(path, key, &why)) {
    const auto n = static_cast<std::uint32_t>(vocab.size());
    bool ids_ok = true;
    for (const std::int32_t id : cached->src_ids()) ids_ok = ids_ok && static_cast<std::uint32_t>(id) < n;
    for (const std::int32_t id : cached->tgt_ids()) ids_ok = ids_ok && static_cast<std::uint32_t>(id) < n;
    if (ids_ok) {
      out.hit = true;
      return std::move(*cached);
    }
    why = fmt::format("encoded cache '{}': ids outside the vocabulary of {} pieces", path, n);
  }
  out.miss_reason = why;
  EncodedCorpus encoded = EncodedCorpus::encode(read_corpus(), vocab);
  encoded.save(path, key);
  return encoded;
}

}  // namespace attnlab::nmt
