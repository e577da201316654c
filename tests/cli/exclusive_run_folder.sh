#!/usr/bin/env bash
# One writer per run folder: while `attnlab train` runs, a second `attnlab train` into the same
# folder is refused at once naming the folder and the holder's pid and host, and readers
# (`attnlab status`) still work; after a kill -9 of the holder, a new `attnlab train` resumes
# with no cleanup (the kernel released the lock; the stale lock file is simply reused). A torn
# last line of metrics.jsonl does not stop a reader.
# usage: exclusive_run_folder.sh ATTNLAB_PROGRAM
source "$(dirname "$0")/scratch.sh"
tiny_experiment exclusive training.max_steps=80 training.eval_every=40 training.checkpoint_every=10 >exp.toml

"$attnlab" train exp.toml --run-dir run >first.log 2>&1 &
holder=$!
while [ ! -e run/checkpoints/step-00000010.safetensors ]; do
  kill -0 $holder 2>/dev/null || { echo "the first run ended early"; cat first.log; exit 1; }
  sleep 0.05
done
# Stopped where it is, so that it still holds the folder however slowly the next commands start
# (its 80 steps take a fraction of a second); the kill -9 below ends it stopped.
kill -STOP $holder

set +e
started=$(date +%s%N)
"$attnlab" train exp.toml --run-dir run >second.log 2>&1
rc=$?
took_ms=$(( ($(date +%s%N) - started) / 1000000 ))
set -e
[[ $rc -ne 0 ]] || { echo "the second writer was not refused"; cat second.log; exit 1; }
grep -q "run folder run is in use by another attnlab process (pid $holder on host $(hostname)" second.log ||
  { echo "the refusal does not name the folder, pid $holder and host:"; cat second.log; exit 1; }
echo "second writer refused in ${took_ms} ms: $(grep -o 'run folder.*)' second.log | head -1)"

"$attnlab" status run >status.log 2>&1 || { echo "status failed while the run holds the folder"; cat status.log; exit 1; }
grep -q "running" status.log || { echo "status does not show the run as running:"; cat status.log; exit 1; }

kill -KILL $holder
wait $holder 2>/dev/null || true
[ -e run/lock ] || { echo "no lock file left behind (expected a stale one)"; exit 1; }
printf '{"kind":"train","step":99999,"lo' >>run/metrics.jsonl   # a writer cut off mid-line
"$attnlab" status run >status2.log 2>&1 || { echo "status failed on a torn metrics line"; cat status2.log; exit 1; }

"$attnlab" train exp.toml --run-dir run >resumed.log 2>&1 ||
  { echo "the new run did not start after kill -9 of the holder"; cat resumed.log; exit 1; }
grep -q "resumed from" resumed.log || { echo "the new run did not resume:"; cat resumed.log; exit 1; }
[ -e run/checkpoints/step-00000080.safetensors ]
python3 - run/metrics.jsonl <<'PY'
import json, sys
for n, line in enumerate(open(sys.argv[1]), 1):
    json.loads(line)  # every line whole: the torn one was dropped on resume
PY
echo "kill -9 of the holder: the next attnlab train resumed without cleanup"
