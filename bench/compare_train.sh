#!/usr/bin/env bash
# Training-step throughput of attnlab against the PyTorch reference of the same model, both run
# back to back in this one script run; prints each result line and a table with the ratio
# attnlab / PyTorch in target tokens per second (> 1: attnlab is faster). See bench/README.md.
#
#   bash bench/compare_train.sh            # small (10 timed steps) and base (3 timed steps)
#   MODELS=small THREADS=2 BUILD=build PYTHON=/usr/bin/python3 bash bench/compare_train.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BUILD=${BUILD:-$here/../build}
PYTHON=${PYTHON:-/usr/bin/python3}
THREADS=${THREADS:-2}
MODELS=${MODELS:-"small base"}
bin=$BUILD/bin/bench_train_step
[[ -x $bin ]] || { echo "build it first: cmake --build $BUILD" >&2; exit 1; }
"$PYTHON" -c "import torch" 2>/dev/null || { echo "no torch for $PYTHON: apt-get install -y python3-torch" >&2; exit 1; }

field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }
declare -A line
for model in $MODELS; do
  line[attnlab.$model]=$(OMP_NUM_THREADS=$THREADS "$bin" --model "$model" --threads "$THREADS")
  echo "${line[attnlab.$model]}"
  line[pytorch.$model]=$(OMP_NUM_THREADS=$THREADS "$PYTHON" "$here/pytorch_train_step.py" --model "$model" --threads "$THREADS")
  echo "${line[pytorch.$model]}"
done
echo
printf '| model | threads | attnlab ms/step | PyTorch ms/step | attnlab tok/s | PyTorch tok/s | attnlab / PyTorch (tok/s) |\n'
printf '|---|---:|---:|---:|---:|---:|---:|\n'
for model in $MODELS; do
  a=${line[attnlab.$model]} p=${line[pytorch.$model]}
  ta=$(field tgt_tok_per_s "$a") tp=$(field tgt_tok_per_s "$p")
  printf '| %s | %s | %s | %s | %s | %s | %.2f |\n' "$model" "$THREADS" "$(field ms_per_step "$a")" \
    "$(field ms_per_step "$p")" "$ta" "$tp" "$(awk -v a="$ta" -v p="$tp" 'BEGIN { print a / p }')"
done
