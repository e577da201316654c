#!/usr/bin/env bash
# attnlab eval follows the [eval] table of the run's experiment (BLEU mode, beam, alpha, checkpoint
# averaging), kept in the run folder by attnlab train; command-line flags override it.
# usage: eval_settings.sh ATTNLAB_PROGRAM
source "$(dirname "$0")/scratch.sh"
write_experiment() {  # "$@": the [eval] settings, e.g. eval.beam=2
  tiny_experiment tiny data.synthetic.train_pairs=600 data.synthetic.dev_pairs=10 data.synthetic.test_pairs=10 \
    vocab.size=120 model.d_model=16 model.heads=2 model.d_ff=32 training.batch_tokens=400 training.max_steps=6 \
    training.warmup_steps=2 training.eval_every=6 training.checkpoint_every=2 training.keep_checkpoints=3 "$@" >exp.toml
}
expect() {  # $1: file, $2: fixed text it must hold
  grep -qF -- "$2" "$1" || { echo "expected '$2' in $1:"; cat "$1"; exit 1; }
}
write_experiment 'eval.bleu="tokenized"' eval.beam=2 eval.alpha=1.5 eval.average_last=2
"$attnlab" train exp.toml >train.log 2>&1
grep -qE "^bleu = ['\"]tokenized['\"]" runs/tiny/eval.toml || { echo "eval.toml lacks the bleu mode"; cat runs/tiny/eval.toml; exit 1; }

"$attnlab" eval runs/tiny --test >eval.log 2>&1
expect eval.log "bleu mode: tokenized; beam 2, alpha 1.5"
expect eval.log "averaged the last 2 checkpoints"
expect eval.log "average-last-2.safetensors"

# Flags override the kept settings.
"$attnlab" eval runs/tiny --test --bleu sacrebleu --beam 1 --alpha 0.6 --average 0 >flags.log 2>&1
expect flags.log "bleu mode: sacrebleu; beam 1, alpha 0.6"
if grep -q "averaged" flags.log; then echo "--average 0 still averaged"; exit 1; fi

# A changed [eval] table reaches a finished run through attnlab train, without retraining it.
write_experiment 'eval.bleu="sacrebleu"' eval.beam=3
"$attnlab" train exp.toml >retrain.log 2>&1
"$attnlab" eval runs/tiny >changed.log 2>&1
expect changed.log "bleu mode: sacrebleu; beam 3, alpha 0.6"

# A checkpoint file given directly finds its run's settings too.
"$attnlab" eval runs/tiny/checkpoints/step-00000006.safetensors >file.log 2>&1
expect file.log "beam 3"

# A run folder without eval.toml (an older run): the defaults, with a note saying so.
rm runs/tiny/eval.toml
"$attnlab" eval runs/tiny >old.log 2>&1
expect old.log "has no eval.toml"
expect old.log "bleu mode: sacrebleu; beam 4, alpha 0.6"

# A damaged eval.toml is refused naming the file, line and column.
printf '[eval]\nbeam = "four"\n' >runs/tiny/eval.toml
if "$attnlab" eval runs/tiny >bad.log 2>&1; then echo "a damaged eval.toml was accepted"; exit 1; fi
expect bad.log "eval.toml:2:"
echo "eval follows the run's [eval] table; flags override it"
