#!/usr/bin/env bash
# Each way a row's turn ends, as a Slurm array task, on a real one-node cluster this test starts
# (slurm_cluster.sh): base finishes (its task COMPLETED); bad fails (its target file is one line
# short): its task exits non-zero, so Slurm calls it FAILED, and `attnlab status` shows the row
# failed with the cause; taken is lost: the array is submitted held, another attnlab process takes
# the row's folder, the array is released, and taken's task passes the row over, exits 0 (nothing
# failed) and the other process finishes the row.
# (Held by a search and promoted rows taken by a task: slurm_search.sh; cancelled and resumed:
# slurm_suite.sh; the same outcomes serially and with --jobs: suite_outcomes.sh.)
# usage: slurm_outcomes.sh ATTNLAB_PROGRAM
here=$(cd "$(dirname "$0")" && pwd)  # before scratch.sh moves to the scratch folder
source "$here/scratch.sh"
source "$here/slurm_cluster.sh"
source "$here/outcome_suite.sh"
fail() { echo "$1"; shift; for f in "$@"; do echo "--- $f"; cat "$f"; done; exit 1; }

outcome_corpus
# Three of its rows (late is left out: three tasks are enough).
outcome_suite outcomes | sed '/^\[rows.late\]/,+1d' >suite.toml
printf '[suite.slurm]\ncpus = 1\ntime = "00:30:00"\n' >>suite.toml

"$attnlab" run suite.toml --slurm --sbatch=--hold >submit.txt 2>submit.log || fail "submission failed" submit.txt submit.log
job=$(sed -n 's/.*Slurm job array \([0-9]*\) .*/\1/p' submit.txt)
[ -n "$job" ] || fail "no job id" submit.txt
task_of() { awk -F'\t' -v key="$1" '$4 == key {print $2}' runs/outcomes/slurm/jobs.tsv; }

"$attnlab" run suite.toml --row taken@1 --quiet >taker.log 2>&1 &
taker=$!
held_by_taker() { grep -qs "pid $taker " runs/outcomes/taken-s1-*/lock; }
wait_for 120 "the other process to take the row" held_by_taker
kill -STOP $taker
scontrol release "$job"
wait_for 300 "the array's tasks" queue_empty
kill -CONT $taker
wait $taker || fail "the other process failed to train taken" taker.log

# Slurm's own record of a task (kept for MinJobAge, 300 s, after it ends): "JobState=X ExitCode=N:S".
state_of() {
  local line
  line=$(scontrol -o show job "${job}_$(task_of "$1")")
  echo "$(grep -o 'JobState=[A-Z]*' <<<"$line") $(grep -o ' ExitCode=[0-9:]*' <<<"$line" | tr -d ' ')"
}
echo "base: $(state_of base@1); bad: $(state_of bad@1); taken: $(state_of taken@1)"
state_of base@1 | grep -qx 'JobState=COMPLETED ExitCode=0:0' || fail "base's task did not complete" runs/outcomes/base-s1-*/run.log
state_of bad@1 | grep -qx 'JobState=FAILED ExitCode=4:0' || fail "bad's task did not fail with exit status 4" runs/outcomes/bad-s1-*/run.log
state_of taken@1 | grep -qx 'JobState=COMPLETED ExitCode=0:0' || fail "taken's task did not exit 0" runs/outcomes/taken-s1-*/run.log
grep -q "taken (seed 1): trained by another process, passed over" runs/outcomes/taken-s1-*/run.log ||
  fail "taken's task did not say another process trains the row" runs/outcomes/taken-s1-*/run.log
grep -q "bad (seed 1) failed: .*short.tgt" runs/outcomes/bad-s1-*/run.log || fail "bad's log does not give the cause" runs/outcomes/bad-s1-*/run.log

"$attnlab" status runs/outcomes >status.txt 2>&1 || true
cat status.txt
grep -q "3 row(s): 2 done, 1 failed" status.txt || fail "status does not count 2 done, 1 failed" status.txt
grep -EA1 "^bad +1 +failed " status.txt | grep -q "error: .*short.tgt" || fail "status does not show bad's cause" status.txt
echo "Slurm row outcomes: finished (COMPLETED), failed (FAILED, exit 4, shown by status), lost to another process (exit 0)"
