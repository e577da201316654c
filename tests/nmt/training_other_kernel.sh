#!/usr/bin/env bash
# The tests of what training reaches (doctest suite "training") once more under OpenBLAS kernels
# other than those the CPU selects, so that a bound that holds for one rounding only fails here:
# Haswell's on a CPU with AVX-512 (which selects SkylakeX or later), Sandybridge's on one with
# AVX2 only, Nehalem's otherwise.
set -euo pipefail
test_nmt=$1
flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
if [[ $flags == *" avx512f "* ]]; then
  core=Haswell
elif [[ $flags == *" avx2 "* ]]; then
  core=Sandybridge
else
  core=Nehalem
fi
echo "training tests under OPENBLAS_CORETYPE=$core"
OPENBLAS_CORETYPE=$core "$test_nmt" --test-suite=training --no-version
