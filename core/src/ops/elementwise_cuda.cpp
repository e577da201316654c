// The Tensor-level <fn>_cuda functions of binary, activation, dropout, adam and embedding: they
// unpack the tensors and call the raw launchers of cuda/elementwise.h (kernels in ops/*_cuda.cu,
// which cannot include attnlab/tensor.h: nvcc does not compile fmt). Files named *_cuda.cpp are
// compiled only in a CUDA build (core/CMakeLists.txt); dispatch.h calls these only there.
#include <cmath>

#include "cuda/elementwise.h"
#include "cuda/launch.h"
#include "device/index_check.h"
#include "device/index_check_log.h"
#include "ops/activation_kernels.h"
#include "ops/adam_kernels.h"
#include "ops/binary_kernels.h"
#include "ops/dropout_kernels.h"
#include "ops/embedding_kernels.h"

namespace attnlab::detail {
namespace {

// Makes t's device current and returns its stream, where every launch goes.
cudaStream_t use_device(const Tensor& t) {
  cuda::set_device(t.device().index);
  return cuda::current_stream(t.device().index);
}

}  // namespace

void binary_forward_cuda(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  const cudaStream_t stream = use_device(out);
  cuda::binary_forward(static_cast<int>(op), out.dtype(), a.raw_data(), a.numel(), b.raw_data(), b.numel(),
                       out.raw_data(), out.numel(), stream);
}

void scale_forward_cuda(const Tensor& x, double factor, Tensor& out) {
  const cudaStream_t stream = use_device(out);
  cuda::scale_forward(x.dtype(), x.raw_data(), factor, out.raw_data(), x.numel(), stream);
}

void add_inplace_cuda(Tensor& dst, const Tensor& src) {
  const cudaStream_t stream = use_device(dst);
  cuda::add_inplace(dst.dtype(), dst.raw_data(), src.raw_data(), dst.numel(), stream);
}

void sum_rows_cuda(const Tensor& in, Tensor& out) {
  const cudaStream_t stream = use_device(out);
  const std::int64_t cols = out.numel();
  const std::int64_t rows = cols == 0 ? 0 : in.numel() / cols;
  cuda::sum_rows(in.dtype(), in.raw_data(), rows, cols, out.raw_data(), stream);
}

void activation_forward_cuda(Activation kind, const Tensor& x, Tensor& y) {
  const cudaStream_t stream = use_device(y);
  cuda::activation_forward(static_cast<int>(kind), x.dtype(), x.raw_data(), y.raw_data(), x.numel(), stream);
}

void activation_backward_cuda(Activation kind, const Tensor& x, const Tensor& dy, Tensor& dx) {
  const cudaStream_t stream = use_device(dx);
  cuda::activation_backward(static_cast<int>(kind), x.dtype(), x.raw_data(), dy.raw_data(), dx.raw_data(),
                            x.numel(), stream);
}

void dropout_forward_cuda(const Tensor& x, double p, philox::SeedRef seed, std::uint64_t offset, Tensor& y) {
  const cudaStream_t stream = use_device(y);
  cuda::dropout_apply(x.dtype(), x.raw_data(), y.raw_data(), x.numel(), p, seed, offset, stream);
}

void dropout_backward_cuda(const Tensor& dy, double p, philox::SeedRef seed, std::uint64_t offset, Tensor& dx) {
  const cudaStream_t stream = use_device(dx);
  cuda::dropout_apply(dy.dtype(), dy.raw_data(), dx.raw_data(), dy.numel(), p, seed, offset, stream);
}

void adam_update_cuda(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, const AdamHyper& h) {
  const cudaStream_t stream = use_device(param);
  cuda::adam_update(param.dtype(), param.raw_data(), grad.raw_data(), m.raw_data(), v.raw_data(), param.numel(),
                    adam_step_scalars(h), stream);
}

void embedding_check_ids_cuda(const Tensor& ids, std::int64_t vocab) {
  // The gather kernel checks the ids (embedding_forward_cuda); beyond the positions an
  // index-check word can name, they are checked here, on a copy on the host.
  if (ids.numel() >= index_check::kMaxCheckedPositions) embedding_check_ids_cpu(ids.to(Device::cpu()), vocab);
}

void embedding_forward_cuda(const Tensor& weight, const Tensor& ids, Tensor& out) {
  const cudaStream_t stream = use_device(out);
  const std::int64_t vocab = weight.dim(0);
  std::uint64_t* check = nullptr;
  if (ids.numel() > 0 && ids.numel() < index_check::kMaxCheckedPositions)
    check = cuda::reserve_index_check(out.device().index, {"embedding", "id", embedding_id_rule(vocab)});
  cuda::embedding_forward(weight.dtype(), weight.raw_data(), ids.dtype(), ids.raw_data(), ids.numel(), vocab,
                          weight.dim(1), check, out.raw_data(), stream);
}

void embedding_backward_cuda(const Tensor& dout, const Tensor& ids, Tensor& dweight) {
  const cudaStream_t stream = use_device(dweight);
  cuda::embedding_backward(dweight.dtype(), dout.raw_data(), ids.dtype(), ids.raw_data(), ids.numel(),
                           dweight.dim(0), dweight.dim(1), dweight.raw_data(), stream);
}

}  // namespace attnlab::detail
