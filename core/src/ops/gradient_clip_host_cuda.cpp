// gradient_clip_cuda: reserves the call's check word and unpacks the tensors for the launcher of
// gradient_clip_cuda.cu (CUDA builds only).
#include "cuda/elementwise.h"
#include "device/index_check_log.h"
#include "ops/gradient_clip_cuda.h"
#include "ops/gradient_clip_kernels.h"

namespace attnlab::detail {

void gradient_clip_cuda(const Tensor& squares, double max_norm, Tensor& norm, Tensor& factor) {
  const int device = squares.device().index;
  cuda::set_device(device);
  std::uint64_t* check =
      cuda::reserve_index_check(device, {.op = "gradient_clip", .message = kGradientClipNotFinite});
  cuda::gradient_clip(squares.data<double>(), max_norm, check, norm.data<double>(), factor.data<double>(),
                      cuda::current_stream(device));
}

}  // namespace attnlab::detail
