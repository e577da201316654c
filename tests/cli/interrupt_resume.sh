#!/usr/bin/env bash
# A training run killed with SIGKILL, and one stopped with Ctrl-C (SIGINT), are each started
# again and must end with checkpoints byte-identical to those of an uninterrupted run. While the
# second trains, every thread but its signal thread blocks SIGINT and SIGTERM, so that no handler
# runs on a compute thread.
# usage: interrupt_resume.sh ATTNLAB_PROGRAM
source "$(dirname "$0")/scratch.sh"
tiny_experiment interrupt experiment.seed=5 data.synthetic.train_pairs=2000 data.synthetic.dev_pairs=50 \
  data.synthetic.test_pairs=50 vocab.size=200 model.encoder_layers=2 model.decoder_layers=2 training.batch_tokens=600 \
  training.max_steps=120 training.warmup_steps=20 training.eval_every=40 training.log_every=20 \
  training.keep_checkpoints=3 >exp.toml
final=checkpoints/step-00000120.safetensors

wait_for() {  # wait_for FILE PID: until FILE exists, failing if PID ends first
  while [ ! -e "$1" ]; do
    kill -0 "$2" 2>/dev/null || { echo "the run ended before it could be interrupted"; exit 1; }
    sleep 0.02
  done
}

"$attnlab" train exp.toml --run-dir full >full.log 2>&1

"$attnlab" train exp.toml --run-dir killed >killed.log 2>&1 &
pid=$!
wait_for killed/checkpoints/step-00000030.safetensors $pid
kill -KILL $pid
wait $pid 2>/dev/null || true
[ ! -e killed/$final ] || { echo "the killed run had already finished"; exit 1; }
"$attnlab" train exp.toml --run-dir killed >resumed.log 2>&1
grep -q "resumed from" resumed.log
cmp full/$final killed/$final
echo "SIGKILL: resumed to a byte-identical final checkpoint"

"$attnlab" train exp.toml --run-dir stopped >stopped.log 2>&1 &
pid=$!
wait_for stopped/checkpoints/step-00000020.safetensors $pid
threads=0 waiting=0
for status in /proc/$pid/task/*/status; do
  name=$(awk '/^Name:/ {print $2}' "$status")
  blocked=$(awk '/^SigBlk:/ {print $2}' "$status")
  # The signal thread waits in sigwait, which unblocks them while it waits.
  if [ "$name" = attnlab-signals ]; then waiting=$((waiting + 1)); continue; fi
  (( (0x$blocked & 0x4002) == 0x4002 )) ||
    { echo "thread $status ($name) blocks $blocked: not SIGINT and SIGTERM"; exit 1; }
  threads=$((threads + 1))
done
[ $waiting -eq 1 ] || { echo "$waiting threads named attnlab-signals, expected 1"; exit 1; }
echo "$threads threads of the training process block SIGINT and SIGTERM; its signal thread waits for them"
kill -INT $pid
set +e
wait $pid
status=$?
set -e
[ $status -eq 130 ] || { echo "Ctrl-C exit status $status, expected 130"; cat stopped.log; exit 1; }
grep -q "interrupted at step" stopped.log
"$attnlab" train exp.toml --run-dir stopped >restarted.log 2>&1
cmp full/$final stopped/$final
echo "SIGINT: checkpointed, exited 130, resumed to a byte-identical final checkpoint"
