#pragma once
// The core's on/off switches from the environment (ATTNLAB_NO_CACHING_ALLOCATOR,
// ATTNLAB_NO_HOST_BF16, ATTNLAB_TRACE_HOST_WAITS): a variable is on when it is set to anything
// but "" or "0".
#include <cstdlib>
#include <cstring>

namespace attnlab::detail {

inline bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

}  // namespace attnlab::detail
