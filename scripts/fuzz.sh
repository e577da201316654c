#!/usr/bin/env bash
# Runs one libFuzzer harness of fuzz/ (fuzz/README.md) for SECONDS (default 600), in the sanitizer
# build (scripts/sanitize.sh; configured and built here when missing):
#   bash scripts/fuzz.sh NAME [SECONDS] [--fresh] [-- LIBFUZZER_FLAGS...]
# NAME: experiment_toml, suite_toml, corpus_reader, safetensors or bleu_tokenize. The working corpus
# <build>/fuzz/work/NAME starts as a copy of fuzz/corpus/NAME and is kept between runs (--fresh
# starts it again from the seeds). Prints the runs executed, the seconds and the final corpus
# size; on a finding, exits 1 with the path of the input that triggered it.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/sanitizer_env.sh

usage() { echo "usage: scripts/fuzz.sh NAME [SECONDS] [--fresh] [-- LIBFUZZER_FLAGS...]" >&2; exit 2; }
(($# >= 1)) || usage
name=$1
shift
seconds=600
fresh=0
extra=()
while (($#)); do
  case $1 in
    --fresh) fresh=1 ;;
    --) shift; extra=("$@"); break ;;
    *[!0-9]* | '') usage ;;
    *) seconds=$1 ;;
  esac
  shift
done
seeds=fuzz/corpus/$name
[[ -d $seeds ]] || { echo "fuzz: no harness '$name' (known: $(ls fuzz/corpus | tr '\n' ' '))" >&2; exit 2; }

fuzzer=$asan_build_dir/bin/fuzz_$name
if [[ ! -f $asan_build_dir/build.ninja ]]; then
  sanitizer_setup
  sanitizer_configure
fi
mkdir -p "$asan_build_dir/fuzz"
# ATTNLAB_FUZZ_PREBUILT=1: the caller built the harnesses (scripts/sanitize.sh, which runs several
# at once in one tree, where two build tools must not run side by side).
if [[ ${ATTNLAB_FUZZ_PREBUILT:-0} != 1 ]] &&
   ! cmake --build "$asan_build_dir" --target "fuzz_$name" >"$asan_build_dir/fuzz/build-$name.log" 2>&1; then
  cat "$asan_build_dir/fuzz/build-$name.log"
  echo "fuzz: building fuzz_$name failed" >&2
  exit 1
fi

work=$asan_build_dir/fuzz/work/$name
artifacts=$asan_build_dir/fuzz/artifacts/$name
if ((fresh)) || [[ ! -d $work ]]; then
  rm -rf "$work"
  mkdir -p "$work"
  cp "$seeds"/* "$work"/
fi
mkdir -p "$artifacts"  # (earlier findings stay there)
touch "$artifacts/.run-started"
log=$asan_build_dir/fuzz/$name.log

# -timeout: one input running longer is a hang (a finding); -rss_limit_mb: as much memory as well.
status=0
start=$SECONDS
"$fuzzer" "$work" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$artifacts/" "${extra[@]}" >"$log" 2>&1 || status=$?
elapsed=$((SECONDS - start))

runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
printf 'fuzz %-16s %10s runs in %4d s, corpus %d inputs (%d seeds)\n' "$name" "${runs:-?}" "$elapsed" \
  "$(find "$work" -type f | wc -l)" "$(find "$seeds" -type f | wc -l)"
if ((status != 0)); then
  crash=$(find "$artifacts" -type f -newer "$artifacts/.run-started" | head -n 1)
  tail -n 60 "$log"
  echo "fuzz $name: FAILED (exit status $status); input: ${crash:-none written}; log: $log"
  [[ -n $crash ]] && echo "reproduce: $fuzzer $crash"
  exit 1
fi
