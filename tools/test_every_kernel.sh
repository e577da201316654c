#!/usr/bin/env bash
# Every CTest test under the kernels this CPU selects, under each older instruction set of
# oneDNN's f32 GEMM it can execute (DNNL_MAX_CPU_ISA), under each OpenBLAS kernel it can execute
# with every f32 product on OpenBLAS (ATTNLAB_NO_ONEDNN_SGEMM=1, OPENBLAS_CORETYPE), then with the
# host's bf16 GEMMs turned off (ATTNLAB_NO_HOST_BF16=1): the check that no test's outcome hangs on
# the rounding of the kernels one CPU selects. Prints one line per run and the failures.
#
#   bash tools/test_every_kernel.sh [BUILD_DIR] [CTEST ARGUMENTS]...    (default build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
source tools/openblas_cores.sh
source tools/onednn_isas.sh

failed=0
run() {
  local label=$1 log
  shift
  log=$(mktemp)
  local start=$SECONDS
  if env "$@" ctest --test-dir "$build" -j "$(nproc)" --output-on-failure "${ctest_args[@]}" >"$log" 2>&1; then :; else failed=1; fi
  echo "$label: $(grep -E -o '[0-9]+% tests passed, [0-9]+ tests failed out of [0-9]+' "$log" | tail -1) ($((SECONDS - start)) s)"
  sed -n '/The following tests FAILED/,$p' "$log"
  rm -f "$log"
}
ctest_args=("$@")

echo "native kernels: $(openblas_corename); $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
run "native ($(openblas_corename))"
for isa in "${onednn_isas[@]::${#onednn_isas[@]}-1}"; do
  run "DNNL_MAX_CPU_ISA=$isa" DNNL_MAX_CPU_ISA="$isa"
done
for core in "${openblas_cores[@]}"; do
  run "ATTNLAB_NO_ONEDNN_SGEMM=1 OPENBLAS_CORETYPE=$core ($(OPENBLAS_CORETYPE=$core openblas_corename))" \
    ATTNLAB_NO_ONEDNN_SGEMM=1 OPENBLAS_CORETYPE="$core"
done
run "ATTNLAB_NO_HOST_BF16=1" ATTNLAB_NO_HOST_BF16=1
exit $failed
