#!/usr/bin/env bash
# attnlab data shapes on a small synthetic experiment with static shapes on: a row per multiple,
# the experiment's marked, and fewer shapes but more padding with the multiple than without.
# usage: data_shapes.sh ATTNLAB_PROGRAM
source "$(dirname "$0")/scratch.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }

cat >exp.toml <<'TOML'
[experiment]
name = "shapes"
[data.synthetic]
train_pairs = 3000
[data]
cache_dir = "cache"
[vocab]
size = 300
[training]
batch_tokens = 600
pad_to_multiple = 8
TOML
"$attnlab" data shapes exp.toml --multiple 4 >out.txt 2>log.txt || fail "data shapes exited $?: $(cat log.txt)"
cat out.txt
# The row of a multiple: "M batches shapes tokens share%" ("0 (off) ..." for none).
row() { grep -E "^ *$1 " out.txt || fail "no row for $1 in: $(cat out.txt)"; }
grep -q "3000 training pairs, batches of <= 600 tokens per side" out.txt || fail "no header"
row 0 | grep -q "(off)" || fail "no row without static shapes"
row 8 | grep -q "<- the experiment's" || fail "the experiment's multiple is not marked"
[[ $(grep -c '%' out.txt) -eq 3 ]] || fail "expected rows for 0, 4 and 8"
off=$(row 0 | awk '{print $4}')
four=$(row 4 | awk '{print $3}')
eight=$(row 8 | awk '{print $3}')
((eight < four && four < off)) || fail "shapes should fall with the multiple: off $off, 4: $four, 8: $eight"
pad_off=$(row 0 | awk '{print $6}' | tr -d '%')
pad_eight=$(row 8 | awk '{print $5}' | tr -d '%')
awk -v a="$pad_off" -v b="$pad_eight" 'BEGIN { exit !(b > a) }' ||
  fail "more padding expected at 8: $pad_off, $pad_eight"
echo "data shapes: $off shapes without static shapes, $four at 4, $eight at 8"
