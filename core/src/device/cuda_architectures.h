#pragma once
// Which GPUs a CUDA build can run on, from the architectures its kernels were compiled for (CMake's
// CMAKE_CUDA_ARCHITECTURES, e.g. "80-real;90-real;90-virtual"). Plain C++, unit-tested on hosts
// without a GPU; check_device_available (device.cpp) asks it before any kernel is launched.
#include <string>
#include <string_view>

namespace attnlab {

// Empty when code built for `architectures` runs on a device of compute capability
// major.minor; otherwise why not, naming the build's architectures and the CMake setting to
// change. A real architecture NN (device code, "sm_NN") runs on devices of the same major version
// at or above it (sm_80 code runs on sm_86); a virtual one ("compute_NN", PTX) is compiled by the
// driver for any device at or above it; a plain "NN" is both. "NNa" device code runs on exactly
// that compute capability, "NNf" on its family (same major, at or above). "all", "all-major" and
// "native" are taken to serve every device (the list they stand for is not known here).
std::string cuda_build_refusal(std::string_view architectures, int major, int minor);

// The architectures as people read them: "sm_80, sm_90, compute_90".
std::string cuda_architectures_text(std::string_view architectures);

}  // namespace attnlab
