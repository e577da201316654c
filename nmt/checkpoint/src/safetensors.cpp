#include "attnlab/nmt/checkpoint/safetensors.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <set>

#include <nlohmann/json.hpp>

#include "attnlab/name_table.h"
#include "attnlab/nmt/io/atomic_file.h"

namespace attnlab::nmt {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; this writer copies host bytes as they are");

namespace {

constexpr auto kSafetensorsDTypes = name_table<DType>("safetensors dtype", {{DType::f32, "F32"},
                                                                         {DType::f64, "F64"},
                                                                         {DType::bf16, "BF16"},
                                                                         {DType::i32, "I32"},
                                                                         {DType::i64, "I64"},
                                                                         {DType::u8, "U8"}});
// Same upper bound on the header as the reference implementation.
constexpr std::uint64_t kMaxHeaderBytes = 100u * 1024u * 1024u;
constexpr char kMetadataKey[] = "__metadata__";

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  std::uint64_t begin;
  std::uint64_t end;
};

}  // namespace

std::string_view safetensors_dtype_name(DType dtype) { return kSafetensorsDTypes.name(dtype); }

DType dtype_from_safetensors_name(std::string_view name) { return kSafetensorsDTypes.parse(name); }

const Tensor* SafetensorsContent::find(std::string_view name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t.tensor;
  return nullptr;
}

void write_safetensors(const std::filesystem::path& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto& [key, value] : metadata) meta[key] = value;
    header[kMetadataKey] = std::move(meta);
  }
  std::set<std::string_view> seen;
  std::uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    ATTNLAB_CHECK(!name.empty(), "write_safetensors '{}': a tensor has an empty name",
                  path.string());
    ATTNLAB_CHECK(name != kMetadataKey, "write_safetensors '{}': '{}' is a reserved name",
                  path.string(), name);
    ATTNLAB_CHECK(seen.insert(name).second, "write_safetensors '{}': duplicate tensor name '{}'",
                  path.string(), name);
    ATTNLAB_CHECK(tensor.defined(), "write_safetensors '{}': tensor '{}' is undefined",
                  path.string(), name);
    const std::uint64_t bytes = tensor.nbytes();
    header[name] = {{"dtype", safetensors_dtype_name(tensor.dtype())},
                    {"shape", tensor.shape().dims()},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // 8 + N is a multiple of 8
  write_file_atomically(path, [&](const ByteSink& sink) {
    std::array<unsigned char, 8> prefix{};
    std::uint64_t n = text.size();
    for (auto& b : prefix) b = static_cast<unsigned char>(n & 0xffu), n >>= 8;
    sink(prefix.data(), prefix.size());
    sink(text.data(), text.size());
    for (const auto& named : tensors) {
      const Tensor host = named.tensor.to(Device::cpu());
      sink(host.raw_data(), host.nbytes());
    }
  });
}

SafetensorsContent read_safetensors(const std::filesystem::path& path, std::string label) {
  if (label.empty()) label = fmt::format("safetensors file '{}'", path.string());
  std::error_code ec;
  const std::uint64_t file_size = std::filesystem::file_size(path, ec);
  ATTNLAB_CHECK(!ec, "{} cannot be read: {}", label, ec.message());
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  ATTNLAB_CHECK(file != nullptr, "{} cannot be opened: {}", label, std::strerror(errno));
  auto read_exactly = [&](void* dst, std::uint64_t size, std::string_view what) {
    if (size == 0) return;
    const std::size_t got = std::fread(dst, 1, size, file.get());
    ATTNLAB_CHECK(got == size, "{} is truncated: reading {} stopped after {} of {} bytes", label,
                  what, got, size);
  };

  ATTNLAB_CHECK(file_size >= 8,
                "{} is truncated: {} bytes, less than the 8-byte header length prefix", label,
                file_size);
  std::array<unsigned char, 8> prefix{};
  read_exactly(prefix.data(), 8, "the header length");
  std::uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | prefix[static_cast<std::size_t>(i)];
  ATTNLAB_CHECK(header_len <= file_size - 8,
                "{} is truncated or not a safetensors file: header length {} exceeds the {} bytes "
                "that follow the length prefix",
                label, header_len, file_size - 8);
  ATTNLAB_CHECK(header_len <= kMaxHeaderBytes,
                "{} is not a valid safetensors file: header length {} exceeds the limit of {} "
                "bytes",
                label, header_len, kMaxHeaderBytes);
  ATTNLAB_CHECK(header_len >= 2, "{} is not a valid safetensors file: header length {} is too "
                "short for a JSON object", label, header_len);
  std::string text(static_cast<std::size_t>(header_len), '\0');
  read_exactly(text.data(), header_len, "the header");
  const std::uint64_t data_len = file_size - 8 - header_len;

  nlohmann::ordered_json header;
  try {
    header = nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::ordered_json::exception& e) {
    throw Error(fmt::format("{} is corrupt: the header is not valid JSON ({})", label, e.what()));
  }
  ATTNLAB_CHECK(header.is_object(), "{} is corrupt: the header is a JSON {}, not an object", label,
                header.type_name());

  SafetensorsContent out;
  std::vector<Entry> entries;
  for (const auto& [name, value] : header.items()) {
    if (name == kMetadataKey) {
      ATTNLAB_CHECK(value.is_object(), "{} is corrupt: __metadata__ is not an object", label);
      for (const auto& [key, v] : value.items()) {
        ATTNLAB_CHECK(v.is_string(), "{} is corrupt: metadata '{}' is a {}, not a string", label,
                      key, v.type_name());
        out.metadata.emplace(key, v.get<std::string>());
      }
      continue;
    }
    ATTNLAB_CHECK(!name.empty(), "{} is corrupt: a tensor has an empty name", label);
    ATTNLAB_CHECK(value.is_object() && value.size() == 3 && value.contains("dtype") &&
                      value.contains("shape") && value.contains("data_offsets"),
                  "{} is corrupt: tensor '{}' must be an object with exactly dtype, shape and "
                  "data_offsets, got {}",
                  label, name, value.dump());
    const auto& dtype = value["dtype"];
    ATTNLAB_CHECK(dtype.is_string(), "{} is corrupt: dtype of tensor '{}' is not a string", label,
                  name);
    Entry e{name, DType::f32, Shape(), 0, 0};
    try {
      e.dtype = dtype_from_safetensors_name(dtype.get<std::string>());
    } catch (const Error& err) {
      throw Error(fmt::format("{}: tensor '{}': {}", label, name, err.what()));
    }
    const auto& shape = value["shape"];
    ATTNLAB_CHECK(shape.is_array(), "{} is corrupt: shape of tensor '{}' is not an array", label,
                  name);
    // Shape multiplies its extents in int64 from the left, so the product of the non-zero
    // extents must fit even when another extent makes the tensor empty.
    constexpr auto kMaxElements = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    std::vector<std::int64_t> dims;
    std::uint64_t nonzero_product = 1;
    bool empty = false;
    for (const auto& d : shape) {
      ATTNLAB_CHECK(d.is_number_unsigned(),
                    "{} is corrupt: shape {} of tensor '{}' has an extent that is not a "
                    "non-negative integer",
                    label, shape.dump(), name);
      const std::uint64_t extent = d.get<std::uint64_t>();
      ATTNLAB_CHECK(extent == 0 || nonzero_product <= kMaxElements / extent,
                    "{} is corrupt: shape {} of tensor '{}' has more elements than a tensor can "
                    "hold (2^63 - 1)",
                    label, shape.dump(), name);
      if (extent == 0) empty = true;
      else nonzero_product *= extent;
      dims.push_back(static_cast<std::int64_t>(extent));
    }
    const std::uint64_t numel = empty ? 0 : nonzero_product;
    const auto& offsets = value["data_offsets"];
    ATTNLAB_CHECK(offsets.is_array() && offsets.size() == 2 && offsets[0].is_number_unsigned() &&
                      offsets[1].is_number_unsigned(),
                  "{} is corrupt: data_offsets of tensor '{}' must be two non-negative integers, "
                  "got {}",
                  label, name, offsets.dump());
    e.begin = offsets[0].get<std::uint64_t>();
    e.end = offsets[1].get<std::uint64_t>();
    ATTNLAB_CHECK(e.begin <= e.end, "{} is corrupt: tensor '{}' has data_offsets [{}, {}] that end "
                  "before they begin", label, name, e.begin, e.end);
    ATTNLAB_CHECK(e.end <= data_len,
                  "{} is truncated: tensor '{}' has data_offsets [{}, {}] but the data section "
                  "has only {} bytes",
                  label, name, e.begin, e.end, data_len);
    const std::uint64_t size = dtype_size(e.dtype);
    ATTNLAB_CHECK(numel <= std::numeric_limits<std::uint64_t>::max() / size &&
                      numel * size == e.end - e.begin,
                  "{} is corrupt: tensor '{}' is {}{} ({} elements of {} bytes) but its "
                  "data_offsets [{}, {}] span {} bytes",
                  label, name, dtype.get<std::string>(), shape.dump(), numel, size, e.begin, e.end,
                  e.end - e.begin);
    e.shape = Shape(std::move(dims));
    entries.push_back(std::move(e));
  }

  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  std::uint64_t expected = 0;
  for (const auto& e : entries) {
    ATTNLAB_CHECK(e.begin >= expected,
                  "{} is corrupt: tensor '{}' at data_offsets [{}, {}] overlaps the previous "
                  "tensor, which ends at {}",
                  label, e.name, e.begin, e.end, expected);
    ATTNLAB_CHECK(e.begin == expected,
                  "{} is corrupt: the data section has a gap: tensor '{}' begins at {} but the "
                  "previous tensor ends at {}",
                  label, e.name, e.begin, expected);
    expected = e.end;
  }
  ATTNLAB_CHECK(expected == data_len,
                "{} is corrupt: the tensors cover {} bytes but {} bytes follow the header", label,
                expected, data_len);

  out.tensors.reserve(entries.size());
  for (const auto& e : entries) {
    Tensor t = Tensor::empty(e.shape, e.dtype, Device::cpu());
    read_exactly(t.raw_data(), e.end - e.begin, fmt::format("tensor '{}'", e.name));
    out.tensors.push_back({e.name, std::move(t)});
  }
  return out;
}

}  // namespace attnlab::nmt
