#pragma once
// Helpers shared by the nmt tests: scratch directories, small files, error messages.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace attnlab::nmt::testing {

// A fresh directory under the system temp dir, removed when the object goes away.
class TempDir {
 public:
  explicit TempDir(std::string_view name) {
    path_ = std::filesystem::temp_directory_path() /
            ("attnlab_nmt_" + std::string(name) + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(std::string_view name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline void write_text(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The message of the exception `f` throws ("" when it throws nothing).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// The [base.*] tables of the tiny suites the suite tests read: a synthetic corpus of 100 pairs, a
// 300-piece vocabulary and a 1 + 1-layer model of width 32 (training and rows left to each test).
inline constexpr const char* kTinySuiteBase = R"([base.data.synthetic]
train_pairs = 100
[base.vocab]
size = 300
[base.model]
encoder_layers = 1
decoder_layers = 1
d_model = 32
heads = 4
d_ff = 64
)";

inline bool contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

}  // namespace attnlab::nmt::testing
