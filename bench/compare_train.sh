#!/usr/bin/env bash
# Training-step throughput of attnlab against the PyTorch reference of the same model on the CPU:
# bench/gpu_compare.sh with DEVICE=cpu and the CPU's defaults (fp32, the small and the base model,
# 2 threads, each program's default batch and step counts). Prints each result line and a table
# with the ratio attnlab / PyTorch in target tokens per second (> 1: attnlab is faster). See
# bench/README.md.
#
#   bash bench/compare_train.sh            # small (10 timed steps) and base (3 timed steps)
#   MODELS=small THREADS=2 BUILD=build PYTHON=/usr/bin/python3 bash bench/compare_train.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
PYTHON=${PYTHON:-/usr/bin/python3}
"$PYTHON" -c "import torch" 2>/dev/null || { echo "no torch for $PYTHON: apt-get install -y python3-torch" >&2; exit 1; }
DEVICE=cpu PRECISIONS=fp32 MODELS=${MODELS:-"small base"} THREADS=${THREADS:-2} BATCH_TOKENS=${BATCH_TOKENS-} \
  WARMUP=${WARMUP-} STEPS=${STEPS-} PYTHON=$PYTHON exec bash "$here/gpu_compare.sh"
