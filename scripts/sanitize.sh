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
# which configure other trees and run no code of ours. The plain build's job runs them all.
ctest --test-dir "$asan_build_dir" --output-on-failure -j "$jobs" \
  -LE '^(training-outcome|long-process|build)$'
t2=$SECONDS

# Every fuzzer runs, so that one job reports every finding.
failed=()
for harness in fuzz/corpus/*/; do
  name=$(basename "$harness")
  bash scripts/fuzz.sh "$name" "$fuzz_seconds" --fresh || failed+=("$name")
done
t3=$SECONDS
echo "sanitize: configure + build $((t1 - t0)) s, tests $((t2 - t1)) s, fuzzers $((t3 - t2)) s"
if ((${#failed[@]})); then
  echo "sanitize: findings in: ${failed[*]}"
  exit 1
fi
