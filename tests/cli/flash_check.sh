#!/usr/bin/env bash
# `attnlab check` on a suite whose attention plugin cannot serve one row: without a fallback the
# check fails with the row, the place of [model.attention], the plugin, what it does not support,
# what it supports and the fallback key; with `fallback = "scaled_dot"` the suite is valid, the row
# shows its fallback and a note says why.
# usage: flash_check.sh ATTNLAB_PROGRAM
source "$(dirname "$0")/scratch.sh"
cat >suite.toml <<'TOML'
[suite]
name = "flash-rows"

[base.experiment]
device = "cuda:0"

[base.data.synthetic]
train_pairs = 100

[base.vocab]
size = 200

[base.model]
encoder_layers = 1
decoder_layers = 1
d_model = 64
heads = 4
d_ff = 128

[base.model.attention]
name = "flash"

[rows.A1]
"model.heads" = 1
"model.d_k" = 512
"model.d_v" = 512
TOML
set +e
"$attnlab" check suite.toml >out.txt 2>err.txt
status=$?
set -e
cat out.txt err.txt
[ $status -eq 1 ] || { echo "check exited with $status, expected 1"; exit 1; }
grep -F "row A1: suite.toml:20:1: model.attention: attention plugin 'flash' does not support head size d_k = 512, head size d_v = 512 on cuda (it supports on cuda: f32, bf16; head sizes 16, 32, 64, 128;" err.txt
grep -F 'set fallback = "scaled_dot" (or another attention plugin) in [model.attention]' err.txt

sed -i 's/^name = "flash"$/name = "flash"\nfallback = "scaled_dot"/' suite.toml
set +e
"$attnlab" check suite.toml >out.txt 2>&1
status=$?
set -e
cat out.txt
# Valid: 0 where cuda:0 exists, 3 (valid, not runnable here) on a machine without it.
[[ $status -eq 0 || ($status -eq 3 && $(grep -c "row(s) need a device this machine lacks" out.txt) -eq 1) ]] ||
  { echo "check exited with $status, expected 0 (or 3 without cuda:0)"; exit 1; }
grep -E '^base +1 .* flash +sinusoidal' out.txt
grep -E '^A1 +1 .* scaled_dot \(fallback\) +sinusoidal' out.txt
grep -F "note: row A1: suite.toml:20:1: model.attention: attention plugin 'flash' does not support head size d_k = 512" out.txt
grep -F "using its fallback 'scaled_dot'" out.txt
echo "flash check refused the row, then ran it with its fallback"
