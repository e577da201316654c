#pragma once
// Backend kernels of layer_norm.cpp and rms_norm.cpp. x is viewed as [rows, D]; gamma, beta are
// [D] or undefined; mean and rstd are [rows]; all share dtype and device. centered false is
// RMSNorm: the mean is taken as 0 (and written as 0), the variance is the mean square, and the
// backward has no mean-of-gradient term.
#include "attnlab/tensor.h"

namespace attnlab::detail {

// y = (x - mean) * rstd * gamma + beta, with mean and rstd = 1 / sqrt(var + eps) written per row.
void layer_norm_forward_cpu(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps,
                            Tensor& y, Tensor& mean, Tensor& rstd, bool centered);
// Writes the gradients that are defined on entry (dx, dgamma, dbeta may each be undefined).
// dgamma and dbeta are summed over rows in row order, independent of the thread count.
void layer_norm_backward_cpu(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                             const Tensor& rstd, const Tensor& dy, Tensor& dx, Tensor& dgamma,
                             Tensor& dbeta, bool centered);

// The same on a CUDA device (layer_norm_cuda.cu); dgamma and dbeta are summed by chunks of rows,
// then the chunks in order, so they are deterministic but may differ from the CPU in the last bits.
void layer_norm_forward_cuda(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps,
                             Tensor& y, Tensor& mean, Tensor& rstd, bool centered);
void layer_norm_backward_cuda(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                              const Tensor& rstd, const Tensor& dy, Tensor& dx, Tensor& dgamma,
                              Tensor& dbeta, bool centered);

}  // namespace attnlab::detail
