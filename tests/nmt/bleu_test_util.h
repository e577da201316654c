#pragma once
// Shared helpers of the BLEU tests: the required sacreBLEU test vectors under ../shared/data/bleu.
#include <filesystem>
#include <fstream>
#include <string>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

namespace attnlab::nmt::testing {

inline std::filesystem::path shared_data() { return std::filesystem::path(ATTNLAB_TEST_SHARED_DATA); }

// The vectors are required: a missing file fails the test (it is never skipped).
inline nlohmann::json load_bleu_vectors(const std::string& name) {
  const std::filesystem::path path = shared_data() / "bleu" / name;
  INFO("required BLEU test vectors: " << path.string());
  REQUIRE_MESSAGE(std::filesystem::exists(path),
                  "missing " << path.string() << ": the shared data folder (../shared/data) must be present");
  std::ifstream in(path);
  REQUIRE(in.good());
  nlohmann::json j = nlohmann::json::parse(in);
  REQUIRE(j.is_array());
  REQUIRE(!j.empty());
  return j;
}

}  // namespace attnlab::nmt::testing
