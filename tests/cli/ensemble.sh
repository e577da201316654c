#!/usr/bin/env bash
# Two tiny models of different seeds translate, score and evaluate as one ensemble through the
# program; a third with another vocabulary is refused with both checkpoints named.
# usage: ensemble.sh ATTNLAB_PROGRAM
source "$(dirname "$0")/scratch.sh"
for seed in 1 2; do
  tiny_experiment tiny-$seed experiment.seed=$seed >exp-$seed.toml
  "$attnlab" train exp-$seed.toml >train-$seed.log 2>&1 || { cat train-$seed.log; exit 1; }
done
src=cache/synthetic-1-1000-20-20/test.src
"$attnlab" translate --checkpoint runs/tiny-1 --checkpoint runs/tiny-2 --input $src --output hyp.txt --beam 3 \
  2>translate.log
[ "$(wc -l <hyp.txt)" -eq 20 ] || { echo "expected 20 translations"; cat translate.log; exit 1; }
grep -q "ensemble of 2 models" translate.log
"$attnlab" score --checkpoint runs/tiny-1 --checkpoint runs/tiny-2 --source $src --target hyp.txt \
  --output scores.txt 2>/dev/null
awk -F'\t' 'NF != 2 || $1 > 0 { bad = 1 } END { exit bad || NR != 20 }' scores.txt
"$attnlab" eval runs/tiny-1 runs/tiny-2 --test >eval.log
cat eval.log
grep -q "ensemble of 2 models" eval.log
grep -q '"ensemble"' runs/tiny-1/eval/test-ensemble.json
[ ! -e runs/tiny-1/eval/test.json ]  # the single model's record is not replaced
# Another vocabulary cannot join.
tiny_experiment tiny-3 vocab.size=120 >exp-3.toml
"$attnlab" train exp-3.toml >train-3.log 2>&1
if "$attnlab" translate --checkpoint runs/tiny-1 --checkpoint runs/tiny-3 --input $src 2>refused.log >/dev/null; then
  echo "an ensemble of two vocabularies was accepted"
  exit 1
fi
grep -q "tiny-3.*was trained with vocabulary .* but .*tiny-1.* with .*; members must share one vocabulary" refused.log \
  || { cat refused.log; exit 1; }
echo "two models translated, scored and evaluated as an ensemble"
