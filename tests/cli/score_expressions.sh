#!/usr/bin/env bash
# Score expressions end to end with the program: `attnlab check` on one experiment's file prints
# every site's expressions, the tensors and the kernels' cache state, and names a mistake inside a
# string at its line and column; two `attnlab train` runs started at once into one empty kernel cache
# compile each kernel once and both finish; a third run compiles nothing; the learned tensors are in
# the checkpoint under their layers' names; the model translates (beam search through the caches).
# usage: score_expressions.sh ATTNLAB_PROGRAM
source "$(dirname "$0")/scratch.sh"
export ATTNLAB_KERNEL_CACHE=$work/kernels
expressions=(
  'model.attention.name="flash"'
  'model.attention.score_mod="5 * tanh(score / 5) + bias[h, clamp(kv_idx - q_idx, -4, 4) + 4]"'
  'model.attention.mask_mod="kv_idx == 0 || abs(q_idx - kv_idx) <= 6"'
  'model.attention.tensors.bias.shape=["heads", 9]'
  'model.attention.tensors.bias.init="zeros"'
  'model.attention.tensors.bias.learned=true'
)
tiny_experiment expr-a data.synthetic.train_pairs=600 data.synthetic.dev_pairs=10 data.synthetic.test_pairs=10 \
  vocab.size=120 training.max_steps=20 training.eval_every=20 training.checkpoint_every=20 "${expressions[@]}" >a.toml
sed 's/"expr-a"/"expr-b"/' a.toml >b.toml
sed 's/"expr-a"/"expr-c"/' a.toml >c.toml

"$attnlab" check a.toml >check.log 2>&1 || { cat check.log; exit 1; }
cat check.log
grep -F "encoder, decoder, cross: score_mod = 5 * tanh(score / 5) + bias[h, clamp(kv_idx - q_idx, -4, 4) + 4]" check.log
grep -F "mask_mod  = kv_idx == 0 || abs(q_idx - kv_idx) <= 6" check.log
grep -F "tensor bias: [heads = 4, 9], zeros, learned (a parameter of each attention layer that reads it: 108 values in all)" check.log
grep -F "encoder CPU kernels: not compiled yet" check.log

# A mistake inside the string: its line and column in the file, and the nearest name.
sed 's/abs(q_idx - kv_idx) <= 6/abs(q_idx - kvidx) <= 6/' a.toml >bad.toml
line=$(grep -n '^mask_mod' bad.toml | cut -d: -f1)
column=$(( $(grep '^mask_mod' bad.toml | sed 's/kvidx.*//' | wc -c) - 1 + 1 ))
if "$attnlab" check bad.toml >bad.log 2>&1; then echo "a mistaken expression passed check"; exit 1; fi
cat bad.log
grep -F "bad.toml:$line:$column: model.attention.mask_mod: unknown name 'kvidx'" bad.log
grep -F "did you mean 'kv_idx'?" bad.log

# Two runs at once into the empty cache: one compiles, the other waits and loads; both train.
"$attnlab" train a.toml >a.log 2>&1 & pa=$!
"$attnlab" train b.toml >b.log 2>&1 & pb=$!
wait $pa || { cat a.log; exit 1; }
wait $pb || { cat b.log; exit 1; }
cat a.log b.log | grep -F "score expressions: CPU kernels"
[ "$(ls "$ATTNLAB_KERNEL_CACHE"/*.so | wc -l)" -eq 1 ] || { ls -l "$ATTNLAB_KERNEL_CACHE"; echo "expected one shared object"; exit 1; }
[ "$(cat a.log b.log | grep -c 'compiled now')" -eq 1 ] || { echo "expected one of the two runs to compile"; exit 1; }
grep -E "^expr-a: 20 steps" a.log
grep -E "^expr-b: 20 steps" b.log
# A third run compiles nothing, and check says so.
"$attnlab" train c.toml >c.log 2>&1 || { cat c.log; exit 1; }
grep -F "score expressions: CPU kernels of encoder, decoder, cross from the kernel cache" c.log
"$attnlab" check a.toml | grep -F "encoder CPU kernels: compiled (in the cache)"

# The learned tensors in the checkpoint, by layer and site; the resolved configuration keeps them.
ckpt=$(ls runs/expr-a/checkpoints/*.safetensors | tail -1)
for name in encoder.layers.0.self_attn.bias decoder.layers.0.self_attn.bias decoder.layers.0.cross_attn.bias; do
  grep -qF "\"$name\"" "$ckpt" || { echo "no $name in $ckpt"; exit 1; }
done
grep -F "score_mod = '5 * tanh(score / 5) + bias[h, clamp(kv_idx - q_idx, -4, 4) + 4]'" runs/expr-a/config.toml

src=cache/synthetic-1-600-10-10/test.src
"$attnlab" translate --checkpoint runs/expr-a --input $src --output hyp.txt --beam 2 2>translate.log
[ "$(wc -l <hyp.txt)" -eq 10 ] || { echo "expected 10 translations"; cat translate.log; exit 1; }
echo "score expressions checked, compiled once for two runs, trained, saved and translated"
