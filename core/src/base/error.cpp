#include "attnlab/error.h"

#include "dispatch.h"

namespace attnlab {

void throw_error(std::string message) { throw Error(std::move(message)); }

namespace detail {
void fail_no_cuda(const char* what) {
  throw DeviceError(fmt::format(
      "{}: a CUDA device was requested, but attnlab was built without CUDA "
      "(reconfigure with -DATTNLAB_CUDA=ON on a machine with nvcc)",
      what));
}
void fail_no_cuda_kernel(const char* op) {
  throw DeviceError(fmt::format("{}: this op has no CUDA kernel yet; run it on the cpu device", op));
}
}  // namespace detail

}  // namespace attnlab
