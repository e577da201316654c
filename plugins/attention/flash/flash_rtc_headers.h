#pragma once
// The headers NVRTC reads when it compiles flash's kernels with score expressions, embedded in the
// plugin by CMake (flash_rtc_headers.cpp in the build folder): each one's include name and text.
#include <vector>

namespace attnlab::flash::cuda {

struct RtcHeader {
  const char* name;  // as the kernels include it ("flash_device.cuh", "attnlab/philox.h")
  const char* text;
};
const std::vector<RtcHeader>& rtc_headers();

}  // namespace attnlab::flash::cuda
