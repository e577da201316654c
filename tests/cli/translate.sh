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
"$attnlab" score --checkpoint runs/tiny --source $src --target hyp.txt --output scores.txt 2>/dev/null
awk -F'\t' 'NF != 2 || $1 > 0 { bad = 1 } END { exit bad }' scores.txt
echo "translate, average and score ran on a trained model"
