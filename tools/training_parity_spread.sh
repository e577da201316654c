#!/usr/bin/env bash
# How far attnlab's training and PyTorch's may part on this CPU: for every case of the test
# cli/training-matches-pytorch (tests/cli/parity_cases.sh), trains the case with each build's attnlab
# under the kernels this CPU selects and under each OpenBLAS core type it can execute (with every f32
# product on OpenBLAS: ATTNLAB_NO_ONEDNN_SGEMM=1, OPENBLAS_CORETYPE), trains it in PyTorch under the
# same kernels from the same start, and again from SEEDS starts changed by one float rounding
# (--perturb 1e-7: each initial weight times 1 + 1e-7 u). Prints, per case and per window of steps,
# the largest relative difference of a step's losses between
#   - attnlab and PyTorch under the same kernels (what the test bounds),
#   - attnlab under two kernels or builds, PyTorch under two kernels,
#   - PyTorch from a perturbed start and PyTorch (the trajectory's own sensitivity to rounding),
# beside the test's bound (tools/training_parity_spread_summary.py). The bounds of
# parity_tolerance are set from this (docs/results/training-spread.md).
#
#   bash tools/training_parity_spread.sh [SEEDS] [BUILD_DIR ...]    (defaults: 4, build)
#
# A sanitizer build (build-asan) runs under its usual options. PARITY_CASES="pre-rms" limits the
# cases; PARITY_KERNELS=<regex> the kernels. Needs python3-torch for /usr/bin/python3.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
seeds=${1:-4}
shift || true
builds=("$@")
((${#builds[@]})) || builds=(build)
for b in "${builds[@]}"; do
  [[ -x $b/bin/attnlab ]] || { echo "training_parity_spread: $b/bin/attnlab not built" >&2; exit 1; }
done
/usr/bin/python3 -c "import torch" 2>/dev/null ||
  { echo "training_parity_spread: PyTorch not found for /usr/bin/python3 (apt install python3-torch)" >&2; exit 1; }
source tests/cli/tiny_experiment.sh
source tests/cli/parity_cases.sh
source tools/openblas_cores.sh
read -r -a cases <<<"${PARITY_CASES:-${parity_cases[*]}}"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
kernels=(native)
for core in "${openblas_cores[@]}"; do kernels+=("$core"); done

kernel_env() {
  [[ $1 == native ]] || echo "ATTNLAB_NO_ONEDNN_SGEMM=1 OPENBLAS_CORETYPE=$1"
}

echo "# attnlab against PyTorch over kernels, builds and perturbed starts ($seeds seeds; $(nproc) cores;" \
  "load $(cut -d' ' -f1 /proc/loadavg); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))"
echo "# native kernels: $(openblas_corename)"
for case in "${cases[@]}"; do
  mkdir -p "$work/$case"
  cd "$work/$case"
  parity_experiment "$case" parity >exp.toml
  "$root/${builds[0]}/bin/attnlab" data batches exp.toml --steps 40 --out batches >batches.log 2>&1
  for kernel in "${kernels[@]}"; do
    [[ $kernel =~ ${PARITY_KERNELS:-.} ]] || continue
    read -r -a envs <<<"$(kernel_env "$kernel")"
    for b in "${builds[@]}"; do
      tag="attnlab.$(basename "$b").$kernel"
      rm -rf runs && env "${envs[@]}" "$root/$b/bin/attnlab" train exp.toml >"$tag.log" 2>&1
      mv runs/parity/metrics.jsonl "$tag.jsonl"
    done
    for seed in $(seq 0 "$seeds"); do
      perturb=()
      ((seed == 0)) || perturb=(--perturb 1e-7 --perturb-seed "$seed")
      env "${envs[@]}" /usr/bin/python3 "$root/tools/pytorch_reference_train.py" batches --out "torch" --threads 2 \
        "${perturb[@]}" >/dev/null
      mv torch/losses.jsonl "pytorch.$kernel.$seed.jsonl"
    done
    echo "# $case under $kernel: done" >&2
  done
  echo "$case $(parity_tolerance "$case")" >tolerance.txt
  cd "$root"
done
/usr/bin/python3 tools/training_parity_spread_summary.py "$work" "${cases[@]}"
