#include "fuzz_input.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <system_error>

#include <unistd.h>

namespace attnlab::fuzz {

namespace {

struct ScratchDir {
  std::filesystem::path path;
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "attnlab-fuzz-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) {
      std::perror("attnlab fuzz: mkdtemp");
      std::abort();
    }
    path = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

}  // namespace

const std::filesystem::path& scratch_dir() {
  static const ScratchDir dir;
  return dir.path;
}

std::filesystem::path write_input(std::string_view name, std::string_view bytes) {
  std::filesystem::path path = scratch_dir() / name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    std::perror("attnlab fuzz: writing the input file");
    std::abort();
  }
  return path;
}

}  // namespace attnlab::fuzz
