# Sourced by tools/training_spread.sh and tools/test_every_kernel.sh: the core types of Debian's
# OpenBLAS (a DYNAMIC_ARCH build, which OPENBLAS_CORETYPE overrides) that this CPU can execute,
# oldest first, in openblas_cores; openblas_corename prints the kernels OpenBLAS selects under the
# current environment.
source "$(dirname "${BASH_SOURCE[0]}")/cpu_flags.sh"
openblas_cores=()
cpu_has sse4_2 && openblas_cores+=(Nehalem)
cpu_has avx && openblas_cores+=(Sandybridge)
cpu_has avx2 fma && openblas_cores+=(Haswell Zen)
cpu_has avx512f avx512bw avx512dq avx512vl && openblas_cores+=(SkylakeX)
cpu_has avx512f avx512_bf16 && openblas_cores+=(Cooperlake)

openblas_corename() {
  python3 -c 'import ctypes
lib = ctypes.CDLL("libopenblas.so.0")
lib.openblas_get_corename.restype = ctypes.c_char_p
print(lib.openblas_get_corename().decode())'
}
