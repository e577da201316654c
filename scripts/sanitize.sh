#!/usr/bin/env bash
# The sanitizer job (CI): builds the CPU tree with AddressSanitizer + UndefinedBehaviorSanitizer
# (clang) into build-asan/ (or $ATTNLAB_ASAN_BUILD_DIR), runs the CTest tests under them (all but
# the training-outcome, long-process and build ones), then each libFuzzer harness of fuzz/ for
# $ATTNLAB_FUZZ_SECONDS (default 60) over a fresh copy of its seed corpus. Fails when a test fails
# or a fuzzer finds something (naming the input that caused it).
# Extra arguments go to cmake. One fuzzer for longer: scripts/fuzz.sh (fuzz/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/sanitizer_env.sh
source scripts/ctest_costs.sh
fuzz_seconds=${ATTNLAB_FUZZ_SECONDS:-60}
jobs=${ATTNLAB_JOBS:-$(nproc)}

sanitizer_setup
t0=$SECONDS
sanitizer_configure "$@"
cmake --build "$asan_build_dir" -j "$jobs"
t1=$SECONDS
# Without the training-outcome tests (what a long run reaches: tests/nmt/heavy_tests.cmake): under
# the sanitizers the synthetic corpus's training took 794 s of both cores against 26 s in the
# plain build, and its code paths (training, evaluation, beam search) are the shorter training
# tests' too. Nor the long-process ones (whole runs killed and resumed: tests/CMakeLists.txt),
# whose checkpoint and resume code the in-process resume tests run here, nor the build ones,
# which configure other trees and run no code of ours, nor the reference one, which compares the
# training's numbers with PyTorch's (the same code paths run in shorter tests here). The plain
# build's job runs them all.
ctest_costs_restore "$asan_build_dir" sanitize
ctest --test-dir "$asan_build_dir" --output-on-failure -j "$jobs" \
  -LE '^(training-outcome|long-process|build|reference)$'
ctest_costs_save "$asan_build_dir" sanitize
t2=$SECONDS

# Every fuzzer runs, so that one job reports every finding; $jobs at once (each libFuzzer process
# is one thread, and each still gets its $fuzz_seconds), their reports printed in order.
failed=()
names=()
for harness in fuzz/corpus/*/; do names+=("$(basename "$harness")"); done
mkdir -p "$asan_build_dir/fuzz"
for ((first = 0; first < ${#names[@]}; first += jobs)); do
  batch=("${names[@]:first:jobs}")
  pids=()
  for name in "${batch[@]}"; do
    ATTNLAB_FUZZ_PREBUILT=1 bash scripts/fuzz.sh "$name" "$fuzz_seconds" --fresh \
      >"$asan_build_dir/fuzz/$name.report" 2>&1 &
    pids+=($!)
  done
  for i in "${!batch[@]}"; do
    status=0
    wait "${pids[$i]}" || status=$?
    cat "$asan_build_dir/fuzz/${batch[$i]}.report"
    ((status == 0)) || failed+=("${batch[$i]}")
  done
done
t3=$SECONDS
echo "sanitize: configure + build $((t1 - t0)) s, tests $((t2 - t1)) s, fuzzers $((t3 - t2)) s"
if ((${#failed[@]})); then
  echo "sanitize: findings in: ${failed[*]}"
  exit 1
fi
