#!/usr/bin/env bash
# What training reaches, over the GEMM kernels and seeds: runs the tests of training outcomes
# (the doctest suite "training" of test_nmt) REPEATS times with new seeds each time
# (ATTNLAB_TRAINING_REPEATS), once under the kernels this CPU selects (oneDNN's f32 GEMM where the
# build has oneDNN, OpenBLAS's for the rest), once under each older instruction set of oneDNN's
# GEMM this CPU can execute (DNNL_MAX_CPU_ISA), once under each OpenBLAS core type it can execute
# with every f32 product on OpenBLAS (ATTNLAB_NO_ONEDNN_SGEMM=1, OPENBLAS_CORETYPE: a build
# without oneDNN), then once more without the host's bf16 GEMMs (ATTNLAB_NO_HOST_BF16=1), and
# prints every MESSAGE line they write (the figures each test bounds) with the kernel beside it,
# then the range of each figure per kernel (tools/training_spread_summary.py). The tests' bounds
# are set from this spread, with a margin (docs/results/training-spread.md).
#
#   bash tools/training_spread.sh [REPEATS] [BUILD_DIR]     (defaults: 10, build)
#
# TRAINING_SPREAD_CASE=<doctest test-case filter> measures one test alone (default: all of them).
# TRAINING_SPREAD_KERNELS=<regex> runs only the kernels whose label matches (default: all).
#
# Output: one line per test message, "<kernel> | <message>", then the summary table.
set -euo pipefail
cd "$(dirname "$0")/.."
repeats=${1:-10}
build=${2:-build}
test_nmt=$build/bin/test_nmt
[[ -x $test_nmt ]] || { echo "training_spread: $test_nmt not built (bash scripts/build.sh)" >&2; exit 1; }

source tools/openblas_cores.sh
source tools/onednn_isas.sh

run() {
  local label=$1
  shift
  [[ $label =~ ${TRAINING_SPREAD_KERNELS:-.} ]] || return 0
  env "$@" ATTNLAB_TRAINING_REPEATS="$repeats" \
    "$test_nmt" --test-suite=training --test-case="${TRAINING_SPREAD_CASE:-*}" --success=false --no-version --duration=false 2>&1 |
    sed -n 's/^.*MESSAGE: //p' | sed "s/^/$label | /"
}

echo "# training outcomes over kernels and seeds ($repeats repeats; $(nproc) cores; load $(cut -d' ' -f1 /proc/loadavg))"
echo "# native kernels: $(openblas_corename)"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
{
  run "native (oneDNN ${onednn_isas[*]: -1}, OpenBLAS $(openblas_corename))"
  for isa in "${onednn_isas[@]::${#onednn_isas[@]}-1}"; do
    run "oneDNN $isa" DNNL_MAX_CPU_ISA="$isa"
  done
  for core in "${openblas_cores[@]}"; do
    run "OpenBLAS only, $core ($(OPENBLAS_CORETYPE=$core openblas_corename))" ATTNLAB_NO_ONEDNN_SGEMM=1 \
      OPENBLAS_CORETYPE="$core"
  done
  run "native, ATTNLAB_NO_HOST_BF16=1" ATTNLAB_NO_HOST_BF16=1
} | tee "$out"
echo
python3 tools/training_spread_summary.py <"$out"
