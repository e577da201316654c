#!/usr/bin/env bash
# Train a tiny model with attention = "flash" (on the CPU, with attention dropout), then translate
# with it (incremental decoding through the flash attention against the KV cache).
# usage: train_flash.sh ATTNLAB_PROGRAM
source "$(dirname "$0")/scratch.sh"
tiny_experiment tiny-flash data.synthetic.train_pairs=600 data.synthetic.dev_pairs=10 data.synthetic.test_pairs=10 \
  vocab.size=120 model.attention_dropout=0.1 'model.attention.name="flash"' training.batch_tokens=400 \
  training.max_steps=20 training.warmup_steps=5 training.eval_every=20 training.checkpoint_every=20 >exp.toml
"$attnlab" train exp.toml >train.log 2>&1 || { cat train.log; exit 1; }
cat train.log
grep -F "; flash / sinusoidal / relu)" train.log
grep -E "^tiny-flash: 20 steps" train.log
grep -F "name = 'flash'" runs/tiny-flash/config.toml
src=cache/synthetic-1-600-10-10/test.src
"$attnlab" translate --checkpoint runs/tiny-flash --input $src --output hyp.txt --beam 2 2>translate.log
[ "$(wc -l <hyp.txt)" -eq 10 ] || { echo "expected 10 translations"; cat translate.log; exit 1; }
echo "a tiny model trained and translated with the flash attention"
