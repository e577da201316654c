#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: install the dependencies, build, train the quickstart
# model (experiments/quickstart.toml) on the built-in synthetic corpus and evaluate it on the test
# set. Running it again resumes (or, once finished, re-evaluates) the same run in runs/quickstart.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
build/bin/attnlab train experiments/quickstart.toml "$@"
# BLEU and perplexity of the trained model on the synthetic test set (beam 4, alpha 0.6).
build/bin/attnlab eval runs/quickstart --test
