#!/usr/bin/env bash
# A CUDA device that this build or this machine cannot serve is refused at once, before any data
# is prepared or any model read, with a message naming the device and what is available. Uses
# cuda:N with N the number of visible devices, so it holds on machines with and without GPUs.
# usage: device_unavailable.sh ATTNLAB_PROGRAM
source "$(dirname "$0")/scratch.sh"
count=$("$attnlab" version | sed -n 's/^cuda: built, \([0-9]*\) device(s) visible; kernels for .*$/\1/p')
count=${count:-0}
gpu="cuda:$count"
tiny_experiment nogpu training.max_steps=2 >exp.toml

# expect_refusal LOG COMMAND...: the command fails with status 1 and the device error.
expect_refusal() {
  local log=$1
  shift
  local status=0
  "$@" >"$log" 2>&1 || status=$?
  if [ "$status" -ne 1 ]; then echo "expected exit status 1, got $status: $*"; cat "$log"; exit 1; fi
  if ! grep -q "device $gpu is not available: .*available: cpu" "$log"; then
    echo "no device error in the output of: $*"; cat "$log"; exit 1
  fi
}

expect_refusal train.log "$attnlab" train exp.toml --device "$gpu"
# Nothing was prepared: no run folder, no corpus, no vocabulary.
[ ! -e runs ] && [ ! -e cache ] || { echo "train touched the disk before refusing the device"; ls -R; exit 1; }

sed "s/^name = \"nogpu\"/name = \"nogpu\"\ndevice = \"$gpu\"/" exp.toml >exp-gpu.toml
expect_refusal train-toml.log "$attnlab" train exp-gpu.toml
[ ! -e runs ] && [ ! -e cache ] || { echo "train touched the disk before refusing the device"; exit 1; }

# Inference refuses the device before it looks for the model.
expect_refusal eval.log "$attnlab" eval no-such-run --device "$gpu"
expect_refusal translate.log "$attnlab" translate --checkpoint no-such-run --device "$gpu"
expect_refusal score.log "$attnlab" score --checkpoint no-such-run --source a --target b --device "$gpu"

# A suite row on the device, and --devices.
cat >suite.toml <<'TOML'
[suite]
name = "nogpu"
base = "exp-gpu.toml"
TOML
expect_refusal run.log "$attnlab" run suite.toml
grep -q "suite.toml.*row base" run.log || { echo "the suite error does not name the row"; cat run.log; exit 1; }
expect_refusal run-devices.log "$attnlab" run suite.toml --devices "cpu,$gpu"
[ ! -e runs ] || { echo "run touched the disk before refusing the device"; exit 1; }

# A malformed device name is a different error.
status=0
"$attnlab" train exp.toml --device gpu0 >bad.log 2>&1 || status=$?
[ "$status" -eq 2 ] && grep -q -- "--device: invalid device 'gpu0' (expected cpu, cuda or cuda:N)" bad.log ||
  { echo "bad device name not reported"; cat bad.log; exit 1; }
echo "unavailable devices refused before any work ($gpu)"
