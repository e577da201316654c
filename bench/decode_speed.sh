#!/usr/bin/env bash
# Decoding speed of a trained small model: trains experiments/quickstart.toml (or reuses its run
# folder), then translates the synthetic test set with beam 4 and with greedy decoding and prints
# sentences/s and target tokens/s, with BLEU as a sanity check.
# usage: bash bench/decode_speed.sh [BUILD_DIR]   (run from the repository root)
set -euo pipefail
build=${1:-build}
attnlab="$build/bin/attnlab"
[ -x "$attnlab" ] || { echo "build first: bash scripts/build.sh"; exit 1; }
"$attnlab" train experiments/quickstart.toml >/dev/null 2>&1 || { echo "training failed"; exit 1; }
echo "model: runs/quickstart ($(nproc) cores)"
for beam in 4 1; do
  out=$("$attnlab" eval runs/quickstart --test --beam "$beam" 2>/dev/null)
  speed=$(grep '^bleu mode' <<<"$out" | sed 's/.*decoding //')
  bleu=$(grep '^BLEU' <<<"$out" | sed 's/ (BP.*//; s/.* = /BLEU /')
  echo "beam $beam: $speed; $bleu"
done
