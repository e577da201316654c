#!/usr/bin/env bash
# The tests of what training reaches (doctest suite "training") once more under GEMM kernels other
# than those the CPU selects, so that a bound that holds for one rounding only fails here: on a
# CPU with AVX-512, oneDNN's f32 GEMM one instruction set down (AVX2's) and OpenBLAS's Haswell
# kernels for the products it keeps; on one with AVX2 only, oneDNN held to AVX (where attnlab
# leaves every f32 product to OpenBLAS) and OpenBLAS's Sandybridge kernels; otherwise Nehalem's.
set -euo pipefail
test_nmt=$1
flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
if [[ $flags == *" avx512f "* ]]; then
  core=Haswell isa=AVX2
elif [[ $flags == *" avx2 "* ]]; then
  core=Sandybridge isa=AVX
else
  core=Nehalem isa=SSE41
fi
echo "training tests under OPENBLAS_CORETYPE=$core DNNL_MAX_CPU_ISA=$isa"
OPENBLAS_CORETYPE=$core DNNL_MAX_CPU_ISA=$isa "$test_nmt" --test-suite=training --no-version
