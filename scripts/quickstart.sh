#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: install the dependencies, build, and train the
# quickstart model (experiments/quickstart.toml) on the built-in synthetic corpus. Running it
# again resumes (or, once finished, reports) the same run in runs/quickstart.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
exec build/bin/attnlab train experiments/quickstart.toml "$@"
