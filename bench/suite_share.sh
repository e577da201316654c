#!/usr/bin/env bash
# Two rows of a suite on one machine: one at a time, two at once with the cores divided between
# them (what `attnlab run --jobs 2` does), and two at once each taking every core (what it did
# before: --threads-per-row = the core count). Each row is the quickstart experiment for STEPS
# steps (two seeds), evaluated on 50 dev sentences with beam 1. Prints, per mode, each row's
# training throughput (target tokens/s over its whole training) and the suite's wall time and
# throughput (both rows' target tokens over the wall time, evaluation and start-up included).
#
# usage: bench/suite_share.sh [ATTNLAB] [STEPS]     (defaults: build/bin/attnlab, 60)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
attnlab=$(realpath "${1:-$root/build/bin/attnlab}")
steps=${2:-60}
cores=$(nproc)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

suite() {  # suite NAME
  cat <<TOML
[suite]
name = "$1"
base = "$root/experiments/quickstart.toml"
seeds = [1, 2]
[base.data]
cache_dir = "$work/cache"
[base.data.synthetic]
dev_pairs = 50
[base.training]
max_steps = $steps
eval_every = $steps
checkpoint_every = $steps
[base.eval]
beam = 1
TOML
}

# The corpus and vocabulary once, outside the timings.
suite warmup >warmup.toml
sed -i "s/^max_steps = .*/max_steps = 1/; s/^eval_every = .*/eval_every = 1/; s/^seeds = .*/seeds = [1]/" warmup.toml
"$attnlab" run warmup.toml --quiet >warmup.log 2>&1 || { cat warmup.log; exit 1; }

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "each row: experiments/quickstart.toml, $steps steps; two rows (seeds 1 and 2)"
printf '%-62s %12s %12s %10s %14s\n' mode "row 1 tok/s" "row 2 tok/s" "wall (s)" "suite tok/s"
for mode in one-at-a-time divided every-row-all-cores; do
  suite "$mode" >"$mode.toml"
  case $mode in
    one-at-a-time) args=(--jobs 1) ;;
    divided) args=(--jobs 2) ;;
    every-row-all-cores) args=(--jobs 2 --threads-per-row "$cores") ;;
  esac
  start=$(date +%s.%N)
  "$attnlab" run "$mode.toml" --quiet "${args[@]}" >"$mode.log" 2>&1 || { cat "$mode.log"; exit 1; }
  wall=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
  total=0
  rates=()
  for dir in runs/"$mode"/base-s1-* runs/"$mode"/base-s2-*; do
    read -r tokens seconds _ < <(python3 "$root/bench/training_rate.py" "$dir/metrics.jsonl")
    total=$((total + tokens))
    rates+=("$(awk -v t="$tokens" -v s="$seconds" 'BEGIN { print t / s }')")
  done
  label="$mode (attnlab run ${args[*]})"
  printf '%-62s %12.0f %12.0f %10.1f %14.0f\n' "$label" "${rates[0]}" "${rates[1]}" "$wall" "$(awk -v t="$total" -v w="$wall" 'BEGIN { print t / w }')"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
