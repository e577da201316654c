// index_mask_cuda: unpacks the tensors for the launcher of index_mask_cuda.cu (CUDA builds only).
#include "cuda/elementwise.h"
#include "ops/index_mask_cuda.h"
#include "ops/index_mask_kernels.h"

namespace attnlab::detail {

void index_mask_cuda(const Tensor& ids, std::int64_t id, double at_id, double otherwise, Tensor& out) {
  cuda::set_device(ids.device().index);
  cuda::index_mask(ids.dtype(), ids.raw_data(), ids.numel(), id, at_id, otherwise, out.dtype(), out.raw_data(),
                   cuda::current_stream(ids.device().index));
}

}  // namespace attnlab::detail
