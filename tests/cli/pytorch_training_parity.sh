#!/usr/bin/env bash
# attnlab's training against PyTorch's on the same batches from the same weights: a tiny model
# without dropout trained 40 steps by attnlab train and by tools/pytorch_reference_train.py (the
# reference model of bench/pytorch_train_step.py, torch.optim.Adam, F.cross_entropy with label
# smoothing) must give the same loss at every step, to float rounding; then the same under AdamW,
# the cosine schedule and gradient clipping, and for pre-norm RMSNorm and DeepNorm blocks
# (parity_cases.sh). A wrong gradient, a schedule off by one step, a different Adam or a block built
# otherwise would show within a few steps.
# usage: pytorch_training_parity.sh ATTNLAB_PROGRAM PYTHON SOURCE_DIR
source "$(dirname "$0")/scratch.sh"
source "$(dirname "$0")/parity_cases.sh"
python=$2
tools=$3/tools
declare -A labels=([post]="" [adamw]=" (AdamW, cosine, clipping)" [pre-rms]=" (pre-rms)" [deepnorm]=" (deepnorm)")
for case in "${parity_cases[@]}"; do
  parity_experiment "$case" "parity-$case" >"exp-$case.toml"
  "$attnlab" train "exp-$case.toml" >"train-$case.log" 2>&1
  if [[ $case == adamw ]]; then
    grep -q "1 of 1 steps clipped" "train-$case.log" || { echo "FAIL: the run did not clip"; exit 1; }
  fi
  "$attnlab" data batches "exp-$case.toml" --steps 40 --out "batches-$case" >"batches-$case.log" 2>&1
  # shellcheck disable=SC2046 # the tolerance arguments split on purpose
  "$python" "$tools/pytorch_reference_train.py" "batches-$case" --out "torch-$case" --threads 2 \
    --compare "runs/parity-$case/metrics.jsonl" $(parity_tolerance "$case") | sed "s/^PASS: /PASS${labels[$case]}: /"
done
