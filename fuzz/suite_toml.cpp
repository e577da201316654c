// Fuzzes a suite file through load_suite (a path): the input is written to <scratch>/suite.toml,
// beside a copy of experiments/base.toml as base.toml, so that suite.base = "base.toml" (as the
// shipped suites say) resolves. Every row is then hashed and written out as a run would.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "attnlab/nmt/suite/suite.h"
#include "fuzz_input.h"

namespace {

void write_base_experiment() {
  std::ifstream in(ATTNLAB_FUZZ_BASE_EXPERIMENT, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  attnlab::fuzz::write_input("base.toml", text.str());
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  write_base_experiment();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace attnlab;
  const std::string path = fuzz::write_input("suite.toml", fuzz::as_text(data, size)).string();
  fuzz::expect_errors([&] {
    const nmt::Suite suite = nmt::load_suite(path);
    for (const nmt::SuiteRow& row : suite.rows) {
      (void)nmt::row_dir(suite, row);
      (void)nmt::row_key(row);
      (void)nmt::to_toml(row.config);
    }
  });
  return 0;
}
