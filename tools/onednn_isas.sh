# Sourced by tools/training_spread.sh and tools/test_every_kernel.sh: the instruction sets of
# oneDNN's f32 GEMM (its JIT sgemm, which attnlab's f32 products take where the build has oneDNN:
# core/src/cpu/onednn_sgemm.h) that this CPU can execute, oldest first, in onednn_isas, as the
# values of DNNL_MAX_CPU_ISA. Each rounds differently for long sums; the newest one is what runs
# by default. Below AVX2 (SSE41, AVX), where oneDNN's sgemm is slower than OpenBLAS's, attnlab
# leaves every f32 product to OpenBLAS, so those are not listed. The OpenBLAS kernels
# (tools/openblas_cores.sh) also compute f64 products, the batches of small products split over
# the threads, and every f32 product under ATTNLAB_NO_ONEDNN_SGEMM=1.
source "$(dirname "${BASH_SOURCE[0]}")/cpu_flags.sh"
onednn_isas=()
cpu_has avx2 fma && onednn_isas+=(AVX2)
cpu_has avx512f avx512bw avx512dq avx512vl && onednn_isas+=(AVX512_CORE)
