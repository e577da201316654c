#!/usr/bin/env bash
# attnlab's training against PyTorch's on the same batches from the same weights: a tiny model
# without dropout trained 40 steps by attnlab train and by tools/pytorch_reference_train.py (the
# reference model of bench/pytorch_train_step.py, torch.optim.Adam, F.cross_entropy with label
# smoothing) must give the same loss at every step, to float rounding; then the same under AdamW,
# the cosine schedule and gradient clipping, and for pre-norm RMSNorm and DeepNorm blocks. A wrong
# gradient, a schedule off by one step, a different Adam or a block built otherwise would show
# within a few steps.
# usage: pytorch_training_parity.sh ATTNLAB_PROGRAM PYTHON SOURCE_DIR
source "$(dirname "$0")/scratch.sh"
python=$2
tools=$3/tools
tiny_experiment parity experiment.threads=2 data.synthetic.train_pairs=2000 vocab.size=300 \
  model.encoder_layers=2 model.decoder_layers=2 model.dropout=0.0 training.batch_tokens=600 training.max_steps=40 \
  training.label_smoothing=0.1 training.log_every=1 training.eval_every=40 training.checkpoint_every=40 >exp.toml
"$attnlab" train exp.toml >train.log 2>&1
"$attnlab" data batches exp.toml --steps 40 --out batches >batches.log 2>&1
"$python" "$tools/pytorch_reference_train.py" batches --out torch --threads 2 \
  --compare runs/parity/metrics.jsonl --tolerance 1e-4

# The same under AdamW (weight decay on the matrices and the embedding), the cosine schedule with
# a peak of its own, and gradient clipping below this model's gradient norms (clipping on every
# step): torch.optim.AdamW and clip_grad_norm_ must give the same losses.
tiny_experiment parity-adamw experiment.threads=2 data.synthetic.train_pairs=2000 vocab.size=300 \
  model.encoder_layers=2 model.decoder_layers=2 model.dropout=0.0 training.batch_tokens=600 training.max_steps=40 \
  training.label_smoothing=0.1 training.log_every=1 training.eval_every=40 training.checkpoint_every=40 \
  training.optimizer='"adamw"' training.weight_decay=0.1 training.schedule='"cosine"' training.lr=0.002 \
  training.min_lr=0.0001 training.clip_norm=0.5 >exp-adamw.toml
"$attnlab" train exp-adamw.toml >train-adamw.log 2>&1
grep -q "1 of 1 steps clipped" train-adamw.log || { echo "FAIL: the run did not clip"; exit 1; }
"$attnlab" data batches exp-adamw.toml --steps 40 --out batches-adamw >batches-adamw.log 2>&1
"$python" "$tools/pytorch_reference_train.py" batches-adamw --out torch-adamw --threads 2 \
  --compare runs/parity-adamw/metrics.jsonl --tolerance 1e-4 | sed 's/^PASS: /PASS (AdamW, cosine, clipping): /'

# The other blocks: pre-norm with RMSNorm (and the stacks' final norms), then DeepNorm (its scaled
# initial weights come with the batches' initial weights; the residual scale is the reference's).
for block in pre-rms deepnorm; do
  if [[ $block == pre-rms ]]; then settings=(model.norm_position='"pre"' model.norm.name='"rms_norm"'); else
    settings=(model.norm_position='"deepnorm"'); fi
  tiny_experiment "parity-$block" experiment.threads=2 data.synthetic.train_pairs=2000 vocab.size=300 \
    model.encoder_layers=2 model.decoder_layers=2 model.dropout=0.0 training.batch_tokens=600 training.max_steps=40 \
    training.label_smoothing=0.1 training.log_every=1 training.eval_every=40 training.checkpoint_every=40 \
    "${settings[@]}" >"exp-$block.toml"
  "$attnlab" train "exp-$block.toml" >"train-$block.log" 2>&1
  "$attnlab" data batches "exp-$block.toml" --steps 40 --out "batches-$block" >"batches-$block.log" 2>&1
  "$python" "$tools/pytorch_reference_train.py" "batches-$block" --out "torch-$block" --threads 2 \
    --compare "runs/parity-$block/metrics.jsonl" --tolerance 1e-4 | sed "s/^PASS: /PASS ($block): /"
done
