#!/usr/bin/env bash
# attnlab's training against PyTorch's on the same batches from the same weights: a tiny model
# without dropout trained 40 steps by attnlab train and by tools/pytorch_reference_train.py (the
# reference model of bench/pytorch_train_step.py, torch.optim.Adam, F.cross_entropy with label
# smoothing) must give the same loss at every step, to float rounding. A wrong gradient, a
# schedule off by one step or a different Adam would show within a few steps.
# usage: pytorch_training_parity.sh ATTNLAB_PROGRAM PYTHON SOURCE_DIR
source "$(dirname "$0")/scratch.sh"
python=$2
tools=$3/tools
cat >exp.toml <<'TOML'
[experiment]
name = "parity"
threads = 2
[data]
cache_dir = "cache"
[data.synthetic]
train_pairs = 2000
dev_pairs = 20
test_pairs = 20
[vocab]
size = 300
[model]
encoder_layers = 2
decoder_layers = 2
d_model = 32
heads = 4
d_ff = 64
dropout = 0.0
[training]
batch_tokens = 600
max_steps = 40
warmup_steps = 10
label_smoothing = 0.1
log_every = 1
eval_every = 40
checkpoint_every = 40
TOML
"$attnlab" train exp.toml >train.log 2>&1
"$attnlab" data batches exp.toml --steps 40 --out batches >batches.log 2>&1
"$python" "$tools/pytorch_reference_train.py" batches --out torch --threads 2 \
  --compare runs/parity/metrics.jsonl --tolerance 1e-4
