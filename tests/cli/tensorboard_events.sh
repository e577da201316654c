#!/usr/bin/env bash
# A trained and evaluated tiny run leaves TensorBoard event files that Python's protobuf reads
# back with valid CRCs and the values of metrics.jsonl and the evaluation record.
# usage: tensorboard_events.sh ATTNLAB_PROGRAM PYTHON PROTO_FILE
source "$(dirname "$0")/scratch.sh"
python=$2
proto=$3
tiny_experiment tiny training.log_every=10 training.eval_every=15 >exp.toml
"$attnlab" train exp.toml >train.log 2>&1 || { cat train.log; exit 1; }
"$attnlab" eval runs/tiny --test >eval.log 2>&1 || { cat eval.log; exit 1; }
"$python" "$(dirname "$0")/read_events.py" "$proto" runs/tiny
echo "TensorBoard event files read back"
