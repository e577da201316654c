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
"$attnlab" score --checkpoint runs/tiny --source $src --target hyp.txt --output scores.txt 2>/dev/null
awk -F'\t' 'NF != 2 || $1 > 0 { bad = 1 } END { exit bad }' scores.txt
echo "translate, average and score ran on a trained model"
