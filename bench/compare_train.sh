#!/usr/bin/env bash
# Training-step throughput of attnlab against the PyTorch reference of the same model on the CPU
# (fp32, the same batches, THREADS threads each), interleaved A/B/A/B so that a drift of the
# machine shows in the repeats, with the machine's GEMM rate measured in the same run:
#
#   1. cblas_sgemm alone (bench_gemm, the [4096, 512] x [512, 2048] product of the feed-forward
#      layer, THREADS threads): the rate the step's arithmetic could run at;
#   2. for each model, REPEATS times: bench_train_step, then pytorch_train_step.py, then (BF16=1,
#      the default where the CPU has AVX512_BF16) bench_train_step in bf16 (oneDNN's bf16 GEMMs);
#   3. the sgemm rate again.
#
# Prints each result line and a table per run: ms/step, target tokens/s, model GFLOP/s, the
# step's MFU against the sgemm rate (model FLOP/s / sgemm FLOP/s), the peak resident memory of
# each process (its largest RSS, from /usr/bin/time) and the ratio attnlab / PyTorch in target
# tokens/s (> 1: attnlab is faster), and attnlab's bf16 step against its fp32 step. See
# bench/README.md.
#
#   bash bench/compare_train.sh                        # small and base, 2 repeats, 2 threads
#   MODELS=base REPEATS=3 THREADS=2 BUILD=build PYTHON=/usr/bin/python3 bash bench/compare_train.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BUILD=${BUILD:-$here/../build}
PYTHON=${PYTHON:-/usr/bin/python3}
MODELS=${MODELS:-"small base"}
THREADS=${THREADS:-2}
REPEATS=${REPEATS:-2}
"$PYTHON" -c "import torch" 2>/dev/null || { echo "no torch for $PYTHON: apt-get install -y python3-torch" >&2; exit 1; }
for p in bench_train_step bench_gemm; do
  [[ -x $BUILD/bin/$p ]] || { echo "no $BUILD/bin/$p: build it first (cmake --build $BUILD)" >&2; exit 1; }
done
[[ -x /usr/bin/time ]] || { echo "no /usr/bin/time: apt-get install -y time" >&2; exit 1; }
export OMP_NUM_THREADS=$THREADS
if [[ -z ${BF16:-} ]]; then grep -qw avx512_bf16 /proc/cpuinfo && BF16=1 || BF16=0; fi

sgemm_rate() {  # GFLOP/s of one cblas_sgemm shape, median of 3
  "$BUILD/bin/bench_gemm" --benchmark_filter='^ffn_up_4096x512x2048/cblas_sgemm/' --benchmark_repetitions=3 \
    --benchmark_report_aggregates_only=true --benchmark_format=json 2>/dev/null |
    "$PYTHON" -c 'import json, sys
r = [b for b in json.load(sys.stdin)["benchmarks"] if b.get("aggregate_name") == "median"]
print("%.1f" % (r[0]["FLOPS"] / 1e9))'
}
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }
# measured COMMAND...: the command's stdout, then "rss_mib=N" (its peak resident set).
measured() {
  local rss
  rss=$(mktemp)
  /usr/bin/time -f '%M' -o "$rss" "$@"
  echo " rss_mib=$(($(tail -1 "$rss") / 1024))"
  rm -f "$rss"
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "torch: $("$PYTHON" -c 'import torch; print(torch.__version__)'), threads: $THREADS"
before=$(sgemm_rate)
echo "sgemm before: $before GFLOP/s"
declare -A line
for m in $MODELS; do
  for ((r = 1; r <= REPEATS; ++r)); do
    line[a.$m.$r]=$(measured "$BUILD/bin/bench_train_step" --device cpu --model "$m" --precision fp32 --threads "$THREADS" | tr -d '\n')
    echo "${line[a.$m.$r]}"
    line[p.$m.$r]=$(measured "$PYTHON" "$here/pytorch_train_step.py" --device cpu --model "$m" --precision fp32 \
                      --threads "$THREADS" | tr -d '\n')
    echo "${line[p.$m.$r]}"
    if ((BF16)); then
      line[b.$m.$r]=$(measured "$BUILD/bin/bench_train_step" --device cpu --model "$m" --precision bf16 --threads "$THREADS" | tr -d '\n')
      echo "${line[b.$m.$r]}"
    fi
  done
done
after=$(sgemm_rate)
echo "sgemm after: $after GFLOP/s"
sgemm=$(awk -v a="$before" -v b="$after" 'BEGIN { printf "%.1f", (a + b) / 2 }')

echo
echo "| model | run | attnlab ms/step | PyTorch ms/step | attnlab tok/s | PyTorch tok/s | attnlab GFLOP/s (MFU vs sgemm $sgemm) | PyTorch GFLOP/s (MFU) | attnlab peak RSS MiB | PyTorch peak RSS MiB | attnlab / PyTorch |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for m in $MODELS; do
  for ((r = 1; r <= REPEATS; ++r)); do
    a=${line[a.$m.$r]} p=${line[p.$m.$r]}
    # GFLOP/s from the FLOP count and the step time (the lines' tflops has one decimal only).
    ga=$(awk -v f="$(field model_tflop_per_step "$a")" -v ms="$(field ms_per_step "$a")" 'BEGIN { printf "%.1f", f * 1e3 / (ms / 1e3) }')
    gp=$(awk -v f="$(field model_tflop_per_step "$p")" -v ms="$(field ms_per_step "$p")" 'BEGIN { printf "%.1f", f * 1e3 / (ms / 1e3) }')
    printf '| %s | %d | %s | %s | %s | %s | %s (%.2f) | %s (%.2f) | %s | %s | %.2f |\n' "$m" "$r" \
      "$(field ms_per_step "$a")" "$(field ms_per_step "$p")" "$(field tgt_tok_per_s "$a")" "$(field tgt_tok_per_s "$p")" \
      "$ga" "$(awk -v g="$ga" -v s="$sgemm" 'BEGIN { print g / s }')" "$gp" "$(awk -v g="$gp" -v s="$sgemm" 'BEGIN { print g / s }')" \
      "$(field rss_mib "$a")" "$(field rss_mib "$p")" \
      "$(awk -v a="$(field tgt_tok_per_s "$a")" -v p="$(field tgt_tok_per_s "$p")" 'BEGIN { print a / p }')"
  done
done

if ((BF16)); then
  echo
  echo "| model | run | attnlab fp32 ms/step | attnlab bf16 ms/step | bf16 / fp32 (tok/s) | fp32 loss | bf16 loss | bf16 peak RSS MiB |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|"
  for m in $MODELS; do
    for ((r = 1; r <= REPEATS; ++r)); do
      a=${line[a.$m.$r]} b=${line[b.$m.$r]}
      printf '| %s | %d | %s | %s | %.2f | %s | %s | %s |\n' "$m" "$r" "$(field ms_per_step "$a")" "$(field ms_per_step "$b")" \
        "$(awk -v a="$(field tgt_tok_per_s "$a")" -v b="$(field tgt_tok_per_s "$b")" 'BEGIN { print b / a }')" \
        "$(field loss "$a")" "$(field loss "$b")" "$(field rss_mib "$b")"
    done
  done
fi
