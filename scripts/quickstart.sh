#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: install the dependencies, build the program and its
# plugins (not the tests), train the quickstart model (experiments/quickstart.toml) on the built-in
# synthetic corpus and evaluate it on the test set. Running it again resumes (or, once finished,
# re-evaluates) the same run in runs/quickstart. Arguments go to `attnlab train`.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
bash scripts/setup.sh
setup_done=$SECONDS
bash scripts/build.sh --target attnlab_program
build_done=$SECONDS
build/bin/attnlab train experiments/quickstart.toml "$@"
train_done=$SECONDS
# BLEU and perplexity of the trained model on the synthetic test set (beam 4, alpha 0.6).
build/bin/attnlab eval runs/quickstart --test
echo "quickstart: setup $((setup_done - start)) s, build $((build_done - setup_done)) s," \
     "training $((train_done - build_done)) s, evaluation $((SECONDS - train_done)) s; $((SECONDS - start)) s in all"
