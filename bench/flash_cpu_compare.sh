#!/usr/bin/env bash
# flash's CPU path with score expressions, against what it must beat (issue: score expressions),
# in one job, repetitions interleaved, medians of the milliseconds per call:
#   skip     flash with a sliding window of 128 and a sink (mask_mod) against flash with full causal
#            attention at T 2048: the tiles mask_mod removes are not computed (goal >= 3.5x)
#   cost     flash with ALiBi written as an expression against flash's built-in ALiBi, and the plain
#            score through the expression against flash without it (goal <= 1.15x)
#   dense    flash with an expression against scaled_dot with the same variant as dense terms
#            (ALiBi: the alibi positional plugin's dense terms; soft-capping: scaled_dot's dense
#            reference op), T 256 to 1024 (goal: flash as fast or faster)
#   gemm     flash's GFLOP/s at T 1024 against the machine's best GEMM rate: the fastest of
#            bench_gemm's large cblas_sgemm products (the projections, the feed-forward layers),
#            measured before and after (goal >= 0.4)
#
#   bash bench/flash_cpu_compare.sh                   # REPEATS=3 THREADS=2 BUILD=build
# Prints one Markdown table per comparison; the raw lines are kept in $LOG.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BUILD=${BUILD:-$here/../build}
REPEATS=${REPEATS:-3}
THREADS=${THREADS:-2}
LOG=${LOG:-$(mktemp /tmp/flash_cpu_compare.XXXXXX)}
bench="$BUILD/bin/bench_attention"
gemm="$BUILD/bin/bench_gemm"
for p in "$bench" "$gemm"; do [[ -x $p ]] || { echo "no $p: build it first (cmake --build $BUILD)" >&2; exit 1; }; done
common=(--dims 64 --threads "$THREADS" --warmup 1 --iters 3)

# The fastest median of the large single products, GFLOP/s.
sgemm_rate() {
  "$gemm" --benchmark_filter='(proj|ffn_up|ffn_down)_.*/cblas_sgemm/' --benchmark_repetitions=3 \
    --benchmark_report_aggregates_only=true 2>/dev/null |
    awk '/_median/ {for (i = 1; i <= NF; ++i) if ($i ~ /G\/s$/) {v = $i; sub(/G\/s/, "", v); sub(/^FLOPS=/, "", v); if (v + 0 > best) best = v + 0}}
         END {print best}'
}

echo "# flash_cpu_compare: $(date -u +%FT%TZ), $(nproc) cores, $THREADS threads, load $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$LOG"
echo "sgemm_before $(sgemm_rate)" | tee -a "$LOG"
for r in $(seq "$REPEATS"); do
  echo "# repetition $r" | tee -a "$LOG"
  "$bench" "${common[@]}" --plugins flash --min-len 2048 --max-len 2048 --tokens 2048 --expr window | tee -a "$LOG"
  "$bench" "${common[@]}" --plugins flash --min-len 2048 --max-len 2048 --tokens 2048 | sed 's/^impl=flash /impl=flash_full /' | tee -a "$LOG"
  "$bench" "${common[@]}" --plugins flash --min-len 256 --max-len 1024 | tee -a "$LOG"
  "$bench" "${common[@]}" --plugins flash --min-len 256 --max-len 1024 --expr score | tee -a "$LOG"
  "$bench" "${common[@]}" --plugins flash,scaled_dot --min-len 256 --max-len 1024 --positional alibi | tee -a "$LOG"
  "$bench" "${common[@]}" --plugins flash,scaled_dot --min-len 256 --max-len 1024 --expr alibi | tee -a "$LOG"
  "$bench" "${common[@]}" --plugins flash,scaled_dot --min-len 256 --max-len 1024 --expr softcap | tee -a "$LOG"
done
echo "sgemm_after $(sgemm_rate)" | tee -a "$LOG"
echo "# end: load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$LOG"
python3 "$here/flash_cpu_tables.py" "$LOG"
echo "raw lines: $LOG"
