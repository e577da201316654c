#!/usr/bin/env bash
# A suite interrupted (Ctrl-C) in the middle of its second row is run again: the finished first
# row is skipped, the interrupted row resumes from its checkpoint, the third row is trained, and
# the report lists all three.
# usage: suite_resume.sh ATTNLAB_PROGRAM
source "$(dirname "$0")/scratch.sh"
{
  printf '[suite]\nname = "resume"\n'
  tiny_suite_base
  cat <<'TOML'
[base.training]
batch_tokens = 600
max_steps = 200
warmup_steps = 20
eval_every = 100
checkpoint_every = 20
checkpoint_every_seconds = 0
[base.eval]
beam = 1
[rows.second]
"model.d_ff" = 48
[rows.third]
"model.heads" = 2
TOML
} >suite.toml

"$attnlab" run suite.toml --quiet >first.log 2>&1 &
pid=$!
while ! compgen -G "runs/resume/second-s1-*/checkpoints/step-*.safetensors" >/dev/null; do
  kill -0 $pid 2>/dev/null || { echo "the suite ended before it could be interrupted"; cat first.log; exit 1; }
  sleep 0.02
done
kill -INT $pid
set +e
wait $pid
status=$?
set -e
[ $status -eq 130 ] || { echo "interrupted suite exited $status, expected 130"; cat first.log; exit 1; }
compgen -G "runs/resume/base-s1-*/result.json" >/dev/null || { echo "the first row did not finish"; exit 1; }
! compgen -G "runs/resume/second-s1-*/result.json" >/dev/null || { echo "the second row finished anyway"; exit 1; }

"$attnlab" run suite.toml --quiet >second.log 2>&1
grep -q "base (seed 1): finished earlier, skipped" second.log || { echo "base was not skipped"; cat second.log; exit 1; }
grep -q "resumed from .*second-s1-" second.log || { echo "the second row did not resume"; cat second.log; exit 1; }
grep -q "suite resume: 2 trained, 1 already finished, 0 failed" second.log || { cat second.log; exit 1; }
"$attnlab" report runs/resume >report.txt
for row in base second third; do grep -q "^$row .*done" report.txt || { echo "row $row missing from the report"; cat report.txt; exit 1; }; done
echo "interrupted suite resumed: finished row skipped, interrupted row resumed, report complete"
