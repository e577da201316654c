#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds everything (CUDA parts too when nvcc is present) and
# runs every CPU test suite through CTest. GPU suites skip themselves, with a message, without a GPU.
# Arguments go to cmake (.ci/run gives CI's CUDA architectures). CTest starts the slowest tests
# first, from the costs of the machine's last run (scripts/ctest_costs.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ctest_costs.sh
start=$SECONDS
bash scripts/setup.sh
setup_done=$SECONDS
bash scripts/build.sh "$@"
build_done=$SECONDS
build_dir=${ATTNLAB_BUILD_DIR:-build}
ctest_costs_restore "$build_dir" plain
status=0
ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" || status=$?
ctest_costs_save "$build_dir" plain
echo "test: setup $((setup_done - start)) s, build $((build_done - setup_done)) s, tests $((SECONDS - build_done)) s"
exit "$status"
