#pragma once
// The one place that knows whether CUDA kernels are compiled in. Every other file calls the
// backends through these macros, so a CPU-only build compiles everything but the .cu files and
// answers a CUDA request with "built without CUDA" at run time.
//
// ATTNLAB_WITH_CUDA is a compile definition, never set in code: the core's CMake sets it for the
// core (1 when the CUDA backend is built), and attnlab_add_plugin() / attnlab_plugin_cuda_sources()
// (cmake/AttnlabPlugin.cmake) set it for a plugin target (1 when its CUDA_SOURCES are compiled,
// which happens exactly when the core it builds against has CUDA). A plugin then writes
//   ATTNLAB_DISPATCH(x.device(), my_kernel, args...);   // my_kernel_cuda(...) or my_kernel_cpu(...)
// with my_kernel_cuda defined in one of its CUDA sources, and no preprocessor guard of its own.
#include "attnlab/device.h"

namespace attnlab::detail {
// Throws DeviceError: this build has no CUDA backend.
[[noreturn]] void fail_no_cuda(const char* what);
// Throws DeviceError: the op has no CUDA kernel yet.
[[noreturn]] void fail_no_cuda_kernel(const char* op);
}  // namespace attnlab::detail

#if ATTNLAB_WITH_CUDA
#define ATTNLAB_CUDA_BUILT true
// Runs the statement on a CUDA build; throws "built without CUDA" otherwise.
#define ATTNLAB_CUDA_ONLY(what, ...) __VA_ARGS__
// Calls fn_cuda(...) for a CUDA device, fn_cpu(...) for the host.
#define ATTNLAB_DISPATCH(device, fn, ...) \
  do {                                    \
    if ((device).is_cuda())               \
      fn##_cuda(__VA_ARGS__);             \
    else                                  \
      fn##_cpu(__VA_ARGS__);              \
  } while (0)
#else
#define ATTNLAB_CUDA_BUILT false
#define ATTNLAB_CUDA_ONLY(what, ...) ::attnlab::detail::fail_no_cuda(what)
#define ATTNLAB_DISPATCH(device, fn, ...)              \
  do {                                                 \
    if ((device).is_cuda())                            \
      ::attnlab::detail::fail_no_cuda(#fn);            \
    else                                               \
      fn##_cpu(__VA_ARGS__);                           \
  } while (0)
#endif

// For ops whose CUDA kernels have not been written yet: the host path, or a clear error.
#define ATTNLAB_DISPATCH_CPU(device, fn, ...)        \
  do {                                               \
    if ((device).is_cuda())                          \
      ::attnlab::detail::fail_no_cuda_kernel(#fn);   \
    else                                             \
      fn##_cpu(__VA_ARGS__);                         \
  } while (0)
