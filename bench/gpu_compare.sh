#!/usr/bin/env bash
# Training-step throughput of attnlab against the PyTorch reference of the same model on a GPU,
# both run back to back by this one script: for each precision, bench_train_step then
# pytorch_train_step.py with the same model, device, batch and step counts; then a table with
# ms/step, target tokens/s, model TFLOP/s, MFU and the ratio attnlab / PyTorch in target tokens
# per second (> 1: attnlab is faster). See bench/README.md.
#
#   bash bench/gpu_compare.sh                  # base model, cuda:0, bf16, 25000-token batches
#   PRECISIONS="bf16 tf32 fp32" MODELS=base DEVICE=cuda:0 BATCH_TOKENS=25000 LEN=32 WARMUP=3 STEPS=10 \
#     PYTHON=python3 bash bench/gpu_compare.sh
#   ATTENTIONS="scaled_dot flash cudnn" FUSED=1 bash bench/gpu_compare.sh   # attnlab once per attention plugin
#   MODELS=multi30k BATCH_TOKENS=4096 COMPILE_MODES="default reduce-overhead" bash bench/gpu_compare.sh
#                                              # the small model, torch.compile also with CUDA graphs
#
# DEVICE=cpu runs the same comparison on the host; bench/compare_train.sh is that, with the CPU's
# defaults. THREADS (CPU threads of both programs) is passed only when set, and so are WARMUP,
# STEPS and BATCH_TOKENS when set to the empty string (then each program's per-model defaults).
# Works from a build tree (BUILD, default <repo>/build) and from the folder scripts/pack-gpu.sh
# makes (its run.sh sets the library path for attnlab's programs only: PyTorch runs in the plain
# environment).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
MODELS=${MODELS:-${MODEL:-base}}
DEVICE=${DEVICE:-cuda:0}
PRECISIONS=${PRECISIONS:-bf16}
BATCH_TOKENS=${BATCH_TOKENS-25000}
THREADS=${THREADS:-}
LEN=${LEN:-32}
WARMUP=${WARMUP-3}
STEPS=${STEPS-10}
PYTHON=${PYTHON:-python3}
ATTENTIONS=${ATTENTIONS:-scaled_dot}
FUSED=${FUSED:-1}
# COMPILE=1 also runs PyTorch with torch.compile (default on a GPU; its warmup steps compile),
# once per mode of COMPILE_MODES (default: torch.compile's default mode; reduce-overhead adds CUDA
# graphs of the compiled forward and backward).
if [[ ${DEVICE} == cuda* ]]; then COMPILE=${COMPILE:-1}; else COMPILE=${COMPILE:-0}; fi
COMPILE_MODES=${COMPILE_MODES:-default}

if [[ -x $here/../run.sh ]]; then
  bench=("$here/../run.sh" bench_train_step)
else
  BUILD=${BUILD:-$here/../build}
  bench=("$BUILD/bin/bench_train_step")
  [[ -x ${bench[0]} ]] || { echo "no ${bench[0]}: build it first (cmake --build $BUILD)" >&2; exit 1; }
fi
if [[ $DEVICE == cuda* ]]; then
  "$PYTHON" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 3)" ||
    { echo "$PYTHON has no PyTorch with a visible CUDA device" >&2; exit 1; }
fi

echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1 || echo unknown)"
echo "torch: $("$PYTHON" -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda)')"
echo "attnlab: $("${bench[@]/bench_train_step/attnlab}" version 2>/dev/null | head -1 || true)"
common=(--device "$DEVICE" --len "$LEN")
[[ -n $BATCH_TOKENS ]] && common+=(--batch-tokens "$BATCH_TOKENS")
[[ -n $WARMUP ]] && common+=(--warmup "$WARMUP")
[[ -n $STEPS ]] && common+=(--steps "$STEPS")
[[ -n $THREADS ]] && common+=(--threads "$THREADS") && export OMP_NUM_THREADS=$THREADS

field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }
declare -A line
for m in $MODELS; do
  for p in $PRECISIONS; do
    for a in $ATTENTIONS; do
      line[attnlab.$m.$p.$a]=$("${bench[@]}" "${common[@]}" --model "$m" --precision "$p" --attention "$a" --fused "$FUSED")
      echo "${line[attnlab.$m.$p.$a]}"
    done
    line[pytorch.$m.$p]=$("$PYTHON" "$here/pytorch_train_step.py" "${common[@]}" --model "$m" --precision "$p")
    echo "${line[pytorch.$m.$p]}"
    if ((COMPILE)); then
      for mode in $COMPILE_MODES; do
        line[compile.$mode.$m.$p]=$("$PYTHON" "$here/pytorch_train_step.py" "${common[@]}" --model "$m" \
          --precision "$p" --compile --compile-mode "$mode" 2>>"${COMPILE_LOG:-/dev/null}" ||
          echo "impl=pytorch-compile-$mode failed")
        echo "${line[compile.$mode.$m.$p]}"
      done
    fi
  done
done
echo
printf '| model | device | threads | precision | attention (fused) | batch | attnlab ms/step | PyTorch ms/step | attnlab tok/s | PyTorch tok/s | attnlab TFLOP/s (MFU) | PyTorch TFLOP/s (MFU) | attnlab / PyTorch (tok/s) |'
if ((COMPILE)); then
  for mode in $COMPILE_MODES; do
    label="torch.compile$([[ $mode == default ]] || echo " ($mode)")"
    printf ' %s ms/step | %s tok/s | attnlab / %s (tok/s) |' "$label" "$label" "$label"
  done
fi
printf '\n|---|---|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|'
if ((COMPILE)); then for mode in $COMPILE_MODES; do printf -- '---:|---:|---:|'; done; fi
printf '\n'
for m in $MODELS; do
  for p in $PRECISIONS; do
    for att in $ATTENTIONS; do
      a=${line[attnlab.$m.$p.$att]} t=${line[pytorch.$m.$p]}
      ta=$(field tgt_tok_per_s "$a") tt=$(field tgt_tok_per_s "$t")
      printf '| %s | %s | %s | %s | %s (%s) | %s | %s | %s | %s | %s | %s (%s) | %s (%s) | %.2f |' "$m" "$DEVICE" \
        "${THREADS:--}" "$p" "$(field attention "$a")" "$(field fused "$a")" "$(field batch "$a")" \
        "$(field ms_per_step "$a")" "$(field ms_per_step "$t")" "$ta" "$tt" "$(field tflops "$a")" "$(field mfu "$a")" \
        "$(field tflops "$t")" "$(field mfu "$t")" "$(awk -v a="$ta" -v p="$tt" 'BEGIN { print a / p }')"
      if ((COMPILE)); then
        for mode in $COMPILE_MODES; do
          c=${line[compile.$mode.$m.$p]} tc=$(field tgt_tok_per_s "${line[compile.$mode.$m.$p]}")
          printf ' %s | %s | %s |' "$(field ms_per_step "$c")" "${tc:--}" \
            "$(awk -v a="$ta" -v p="$tc" 'BEGIN { if (p > 0) printf "%.2f", a / p; else print "-" }')"
        done
      fi
      printf '\n'
    done
  done
done
