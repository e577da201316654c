// ATTNLAB_CUDA_MEMORY_LIMIT's sizes: binary and decimal units, bytes, and what is refused.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "attnlab/error.h"
#include "memory/memory_limit.h"

using namespace attnlab;

TEST_CASE("memory sizes take binary and decimal units and plain bytes") {
  CHECK(parse_memory_size("8GiB", "x") == std::size_t{8} << 30);
  CHECK(parse_memory_size("512 MiB", "x") == std::size_t{512} << 20);
  CHECK(parse_memory_size("1.5GiB", "x") == (std::size_t{3} << 30) / 2);
  CHECK(parse_memory_size("64KiB", "x") == 65536);
  CHECK(parse_memory_size("2TiB", "x") == std::size_t{2} << 40);
  CHECK(parse_memory_size("20GB", "x") == 20000000000u);
  CHECK(parse_memory_size("3MB", "x") == 3000000u);
  CHECK(parse_memory_size("1000000", "x") == 1000000u);
  CHECK(parse_memory_size("1", "x") == 1u);
}

TEST_CASE("memory sizes refuse what is not a positive size, naming the variable and the text") {
  for (const char* bad : {"", "GiB", "8 gib", "8GiB ", "-1GiB", "0", "0.1", "eight", "8 G", "1e30TB", "nan", " 8GiB"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(parse_memory_size(bad, "ATTNLAB_CUDA_MEMORY_LIMIT"),
                         doctest::Contains("ATTNLAB_CUDA_MEMORY_LIMIT: expected a memory size such as 8GiB"), Error);
  }
}

TEST_CASE("the CUDA memory limit comes from ATTNLAB_CUDA_MEMORY_LIMIT, none when unset or empty") {
  const char* before = std::getenv(kCudaMemoryLimitVariable);
  const std::string saved = before ? before : "";
  ::unsetenv(kCudaMemoryLimitVariable);
  CHECK(cuda_memory_limit_from_env() == 0);
  ::setenv(kCudaMemoryLimitVariable, "", 1);
  CHECK(cuda_memory_limit_from_env() == 0);
  ::setenv(kCudaMemoryLimitVariable, "2GiB", 1);
  CHECK(cuda_memory_limit_from_env() == std::size_t{2} << 30);
  ::setenv(kCudaMemoryLimitVariable, "two", 1);
  CHECK_THROWS_WITH_AS(cuda_memory_limit_from_env(), doctest::Contains("got 'two'"), Error);
  if (before) ::setenv(kCudaMemoryLimitVariable, saved.c_str(), 1);
  else ::unsetenv(kCudaMemoryLimitVariable);
}
