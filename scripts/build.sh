#!/usr/bin/env bash
# Configures and builds attnlab into ./build (or $ATTNLAB_BUILD_DIR).
#   bash scripts/build.sh [--target TARGET]... [CMAKE ARGUMENTS]...
# Without --target everything is built (program, plugins, tests, benchmarks); --target
# attnlab_program builds the program and its plugins only. Other arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${ATTNLAB_BUILD_DIR:-build}
targets=()
while [[ $# -ge 2 && $1 == --target ]]; do
  targets+=(--target "$2")
  shift 2
done
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$build_dir" -j "$(nproc)" "${targets[@]}"
