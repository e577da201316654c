#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds everything (CUDA parts too when nvcc is present) and
# runs every CPU test suite through CTest. GPU suites skip themselves, with a message, without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
build_dir=${ATTNLAB_BUILD_DIR:-build}
ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)"
