#!/usr/bin/env bash
# A suite running rows two at a time (--jobs 2) and interrupted with Ctrl-C (SIGINT to its whole
# process group, as a terminal sends it) starts no further row: the two running rows stop at a
# checkpoint, the suite exits 130, and the rows not yet started have no run folder.
# usage: suite_parallel_interrupt.sh ATTNLAB_PROGRAM
source "$(dirname "$0")/scratch.sh"
{
  printf '[suite]\nname = "parallel"\n'
  tiny_suite_base
  cat <<'TOML'
[base.training]
batch_tokens = 600
max_steps = 400
warmup_steps = 20
eval_every = 200
checkpoint_every = 10
checkpoint_every_seconds = 0
[rows.second]
"model.d_ff" = 48
[rows.third]
"model.heads" = 2
[rows.fourth]
"model.d_ff" = 32
TOML
} >suite.toml
setsid "$attnlab" run suite.toml --jobs 2 >run.log 2>&1 &
pid=$!
while ! compgen -G "runs/parallel/*-s1-*/checkpoints/step-*.safetensors" >/dev/null; do
  kill -0 $pid 2>/dev/null || { echo "the suite ended before it could be interrupted"; cat run.log; exit 1; }
  sleep 0.02
done
kill -INT -- -$pid
set +e
wait $pid
status=$?
set -e
[ $status -eq 130 ] || { echo "interrupted suite exited $status, expected 130"; cat run.log; exit 1; }
started=$(grep -c " started on " run.log || true)
[ "$started" -eq 2 ] || { echo "$started rows started, expected the 2 running ones only:"; cat run.log; exit 1; }
for row in third fourth; do
  ! compgen -G "runs/parallel/$row-s1-*" >/dev/null || { echo "row $row started after the interruption"; cat run.log; exit 1; }
done
echo "interrupted parallel suite: 2 rows stopped, none started after Ctrl-C, exit 130"
