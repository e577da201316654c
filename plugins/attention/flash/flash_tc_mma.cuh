#pragma once
// The warp-level products on tensor cores (WMMA, bf16 in, f32 accumulate) that the forward and
// backward kernels share: each warp owns 16 rows of a 64-row tile. Include the CUDA API and
// <mma.h> (or their host emulation) first, like the kernel headers that include this one.
#include "flash_tc_device.cuh"

namespace attnlab::flash::cuda::tc::detail {

namespace wmma = nvcuda::wmma;
using FragA = wmma::fragment<wmma::matrix_a, kFrag, kFrag, kFrag, bf16, wmma::row_major>;
using FragBRow = wmma::fragment<wmma::matrix_b, kFrag, kFrag, kFrag, bf16, wmma::row_major>;
using FragBCol = wmma::fragment<wmma::matrix_b, kFrag, kFrag, kFrag, bf16, wmma::col_major>;
using FragC = wmma::fragment<wmma::accumulator, kFrag, kFrag, kFrag, float>;

// out[16][64] (f32, ldo) = a[16 rows of the warp][D] times b[64][D]^T: the warp's 16 rows of a
// product with a transposed partner tile (b row-major is b^T column-major). A warp collective.
template <int D>
__device__ __forceinline__ void rows_times_transposed(float* out, int ldo, const bf16* a, int lda, const bf16* b,
                                                      int ldb) {
  FragC acc[kCols / kFrag];
#pragma unroll
  for (int n = 0; n < kCols / kFrag; ++n) wmma::fill_fragment(acc[n], 0.0f);
#pragma unroll
  for (int kk = 0; kk < D / kFrag; ++kk) {
    FragA fa;
    wmma::load_matrix_sync(fa, a + kk * kFrag, lda);
#pragma unroll
    for (int n = 0; n < kCols / kFrag; ++n) {
      FragBCol fb;
      wmma::load_matrix_sync(fb, b + n * kFrag * ldb + kk * kFrag, ldb);
      wmma::mma_sync(acc[n], fa, fb, acc[n]);
    }
  }
#pragma unroll
  for (int n = 0; n < kCols / kFrag; ++n) wmma::store_matrix_sync(out + n * kFrag, acc[n], ldo, wmma::mem_row_major);
}

// acc[n] += a[16 rows of the warp][64] times b[64][D] (both row-major). A warp collective.
template <int D>
__device__ __forceinline__ void accumulate_rows_times(FragC (&acc)[D / kFrag], const bf16* a, int lda, const bf16* b,
                                                      int ldb) {
#pragma unroll
  for (int kk = 0; kk < kCols / kFrag; ++kk) {
    FragA fa;
    wmma::load_matrix_sync(fa, a + kk * kFrag, lda);
#pragma unroll
    for (int n = 0; n < D / kFrag; ++n) {
      FragBRow fb;
      wmma::load_matrix_sync(fb, b + kk * kFrag * ldb + n * kFrag, ldb);
      wmma::mma_sync(acc[n], fa, fb, acc[n]);
    }
  }
}

}  // namespace attnlab::flash::cuda::tc::detail
