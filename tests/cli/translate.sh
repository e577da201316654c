#!/usr/bin/env bash
# Train a tiny model, then translate, score and average through the program, as a user would.
# usage: translate.sh ATTNLAB_PROGRAM
source "$(dirname "$0")/scratch.sh"
tiny_experiment tiny >exp.toml
"$attnlab" train exp.toml >train.log 2>&1
src=cache/synthetic-1-1000-20-20/test.src
"$attnlab" translate --checkpoint runs/tiny --input $src --output hyp.txt --beam 4 2>translate.log
[ "$(wc -l <hyp.txt)" -eq 20 ] || { echo "expected 20 translations"; exit 1; }
head -3 $src | "$attnlab" translate --checkpoint runs/tiny --beam 1 >greedy.txt 2>/dev/null
[ "$(wc -l <greedy.txt)" -eq 3 ]
"$attnlab" average runs/tiny --last 3
"$attnlab" translate --checkpoint runs/tiny/checkpoints/average-last-3.safetensors --input $src --output avg.txt 2>/dev/null
[ "$(wc -l <avg.txt)" -eq 20 ]
# --until: the checkpoints a shorter run would have had (here: up to the second-newest one).
steps=($(ls runs/tiny/checkpoints | sed -n 's/^step-0*\([0-9]*\)\.safetensors$/\1/p' | sort -n))
[ ${#steps[@]} -ge 3 ] || { echo "expected at least 3 checkpoints, got ${steps[*]}"; exit 1; }
until=${steps[-2]}
"$attnlab" average runs/tiny --last 2 --until "$until" >until.txt
grep -q "averaged 2 checkpoints.*$(printf 'step-%08d' "$until").safetensors) into .*average-last-2-until-$until.safetensors" until.txt ||
  { echo "average --until did not end at step $until"; cat until.txt; exit 1; }
"$attnlab" eval runs/tiny --until "$until" --average 0 >eval-until.txt 2>&1 || { cat eval-until.txt; exit 1; }
grep -q "(step $until)" eval-until.txt || { echo "eval --until did not evaluate step $until"; cat eval-until.txt; exit 1; }
"$attnlab" eval runs/tiny/checkpoints/$(printf 'step-%08d' "$until").safetensors --until "$until" >file-until.txt 2>&1 &&
  { echo "eval --until accepted a checkpoint file"; exit 1; }
grep -q "is one checkpoint file" file-until.txt || { cat file-until.txt; exit 1; }
# A decoding grid: every combination once, the run's records untouched, each line as one eval gives.
record=$(md5sum <runs/tiny/eval/dev.json)
"$attnlab" eval runs/tiny --average 0,2 --beam 1,2 --alpha 0.6 >grid.txt 2>&1 || { cat grid.txt; exit 1; }
[ "$(wc -l <runs/tiny/eval/dev-decoding.tsv)" -eq 5 ] || { echo "expected 4 decodings"; cat grid.txt; exit 1; }
grep -q "^best: average [02], beam [12], alpha 0.6" grid.txt || { echo "no best line"; cat grid.txt; exit 1; }
[ "$(md5sum <runs/tiny/eval/dev.json)" = "$record" ] || { echo "the grid changed the run's dev record"; exit 1; }
"$attnlab" eval runs/tiny --average 2 --beam 2 --alpha 0.6 >one.txt 2>&1 || { cat one.txt; exit 1; }
one=$(sed -n 's/.*"bleu": *\([0-9.]*\).*/\1/p' runs/tiny/eval/dev.json | head -1)
grid=$(awk -F'\t' '$1 == 2 && $2 == 2 {print $4}' runs/tiny/eval/dev-decoding.tsv)
awk -v a="$one" -v b="$grid" 'BEGIN { exit !(a - b < 1e-4 && b - a < 1e-4) }' ||
  { echo "the grid's average 2 / beam 2 scored $grid, one eval $one"; exit 1; }
"$attnlab" eval runs/tiny --beam 1,2 --hypotheses h.txt >hyp-grid.txt 2>&1 && { echo "a grid wrote one hypotheses file"; exit 1; }
grep -q "give one value" hyp-grid.txt || { cat hyp-grid.txt; exit 1; }
"$attnlab" score --checkpoint runs/tiny --source $src --target hyp.txt --output scores.txt 2>/dev/null
awk -F'\t' 'NF != 2 || $1 > 0 { bad = 1 } END { exit bad }' scores.txt
echo "translate, average and score ran on a trained model"
