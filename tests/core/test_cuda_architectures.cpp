// Which GPUs a build's CUDA architectures serve (cuda_architectures.h): device code runs within
// its major version at or above it, PTX anywhere at or above it, "a" code on exactly its compute
// capability, and the refusal names the device, the build's list and the setting to change.
#include <doctest/doctest.h>

#include <string>

#include "attnlab/device.h"
#include "attnlab/error.h"
#include "device/cuda_architectures.h"

using namespace attnlab;

TEST_CASE("cuda architectures: device code within its major version, PTX at or above it") {
  const std::string build = "80-real,90-real,90-virtual";
  CHECK(cuda_build_refusal(build, 8, 0).empty());   // A100
  CHECK(cuda_build_refusal(build, 8, 6).empty());   // RTX 30xx: sm_80 code runs on sm_86
  CHECK(cuda_build_refusal(build, 8, 9).empty());   // L4, RTX 40xx
  CHECK(cuda_build_refusal(build, 9, 0).empty());   // H100, H200
  CHECK(cuda_build_refusal(build, 10, 0).empty());  // newer: the compute_90 PTX, compiled by the driver
  CHECK(cuda_build_refusal(build, 12, 0).empty());
  const std::string t4 = cuda_build_refusal(build, 7, 5);
  CAPTURE(t4);
  CHECK(t4.find("compute capability is 7.5 (sm_75)") != std::string::npos);
  CHECK(t4.find("compiled for sm_80, sm_90, compute_90 only") != std::string::npos);
  CHECK(t4.find("-DCMAKE_CUDA_ARCHITECTURES=75-real") != std::string::npos);

  // Hopper device code alone: no Ampere, and nothing newer without PTX.
  CHECK_FALSE(cuda_build_refusal("90-real", 8, 0).empty());
  CHECK_FALSE(cuda_build_refusal("90-real", 10, 0).empty());
  CHECK(cuda_build_refusal("90-real", 9, 0).empty());
  // CMake's ';' list, a plain number (device code and PTX), and the "a" and "f" suffixes.
  CHECK(cuda_build_refusal("75;90-virtual", 7, 5).empty());
  CHECK(cuda_build_refusal("75;90-virtual", 9, 0).empty());
  CHECK(cuda_build_refusal("75", 8, 0).empty());  // through the compute_75 PTX
  CHECK_FALSE(cuda_build_refusal("75-real;90-virtual", 8, 0).empty());
  CHECK(cuda_build_refusal("90a-real", 9, 0).empty());
  CHECK_FALSE(cuda_build_refusal("100a-real", 10, 3).empty());
  CHECK(cuda_build_refusal("100f-real", 10, 3).empty());
  CHECK(cuda_build_refusal("all", 5, 0).empty());
  CHECK(cuda_build_refusal("native", 7, 0).empty());
}

TEST_CASE("cuda architectures: the text people read, and lists that cannot be read") {
  CHECK(cuda_architectures_text("80-real;90-real;90-virtual") == "sm_80, sm_90, compute_90");
  CHECK(cuda_architectures_text("75") == "sm_75, compute_75");
  CHECK(cuda_architectures_text("90a-real") == "sm_90a");
  CHECK(cuda_architectures_text("all-major") == "all-major");
  CHECK_THROWS_WITH_AS(cuda_build_refusal("sm_90", 9, 0), doctest::Contains("cannot read 'sm_90'"), Error);
  CHECK_THROWS_WITH_AS(cuda_build_refusal("90-fake", 9, 0), doctest::Contains("cannot read '90-fake'"), Error);
}

TEST_CASE("this build names its CUDA architectures exactly when it has CUDA") {
  CHECK(cuda_architectures().empty() == !cuda_built());
  // Read from the list the build passed, which the check before every device's first use reads.
  if (cuda_built()) CHECK(cuda_architectures().find("sm_") != std::string::npos);
}
