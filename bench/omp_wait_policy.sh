#!/usr/bin/env bash
# What OpenMP's wait policy does to a training run that finds the cores busy. One quickstart run
# (STEPS steps, threads left at 0: every core) alone, beside a busy core (a shell loop: what a
# compiler does to it), and beside a second training of its own kind, with each wait policy:
# unset (attnlab's own: GOMP_SPINCOUNT=1000, apps/attnlab/wait_policy.cpp), spin:N
# (GOMP_SPINCOUNT=N: libgomp spins N times, then sleeps; libgomp's default is 300000), passive
# (sleeps at once) and active (spins). Prints the run's target tokens/s in each case and its share
# of the speed it has alone under the same policy.
#
# usage: bench/omp_wait_policy.sh [ATTNLAB] [STEPS] [POLICY...]
#        (defaults: build/bin/attnlab, 60, unset spin:300000 passive active)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
attnlab=$(realpath "${1:-$root/build/bin/attnlab}")
steps=${2:-60}
policies=("${@:3}")
((${#policies[@]})) || policies=(unset spin:300000 passive active)
work=$(mktemp -d)
hog=
cleanup() { [ -n "$hog" ] && kill "$hog" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
cd "$work"
sed -e "s/^max_steps = .*/max_steps = $steps/" -e "s/^eval_every = .*/eval_every = $steps/" \
  -e "s/^checkpoint_every = .*/checkpoint_every = $steps/" -e "s/^log_every = .*/log_every = 10/" \
  -e "s|^\[data\]|[data]\ncache_dir = \"$work/cache\"|" "$root/experiments/quickstart.toml" >exp.toml

# Target tokens/s over the run's training (metrics.jsonl).
rate() { python3 "$root/bench/training_rate.py" "$1/metrics.jsonl" | cut -d' ' -f3; }
train() {  # train POLICY FOLDER
  case $1 in
    unset) env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT "$attnlab" train exp.toml --run-dir "$2" >"$2.log" 2>&1 ;;
    spin:*) env -u OMP_WAIT_POLICY GOMP_SPINCOUNT="${1#spin:}" "$attnlab" train exp.toml --run-dir "$2" >"$2.log" 2>&1 ;;
    *) env -u GOMP_SPINCOUNT OMP_WAIT_POLICY="$1" "$attnlab" train exp.toml --run-dir "$2" >"$2.log" 2>&1 ;;
  esac
}

"$attnlab" train exp.toml --run-dir warmup >warmup.log 2>&1  # corpus and vocabulary
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "one run: experiments/quickstart.toml, $steps steps, threads = $(nproc) (every core)"
printf '%-16s %12s %22s %8s %26s %8s\n' OMP_WAIT_POLICY "alone tok/s" "beside a busy core" share "beside a second training" share
for policy in "${policies[@]}"; do
  train "$policy" "$policy-alone"; alone=$(rate "$policy-alone")
  ( while :; do :; done ) &
  hog=$!
  train "$policy" "$policy-busy"; busy=$(rate "$policy-busy")
  kill "$hog"; wait "$hog" 2>/dev/null || true; hog=
  train "$policy" "$policy-other" & other=$!
  sleep 0.2
  train "$policy" "$policy-pair"; pair=$(rate "$policy-pair")
  wait "$other"
  printf '%-16s %12s %22s %8s %26s %8s\n' "$policy" "$alone" "$busy" "$(awk -v a="$busy" -v b="$alone" 'BEGIN { printf "%.2f", a / b }')" \
    "$pair" "$(awk -v a="$pair" -v b="$alone" 'BEGIN { printf "%.2f", a / b }')"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
