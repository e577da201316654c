#!/usr/bin/env bash
# Each way a row's turn ends, serially and with --jobs 2, on a suite of four rows over corpus files:
#  - base and late finish;
#  - bad fails (its target file is one line short): the suite goes on, records the error in
#    suite.json and the row's row-error.txt, `attnlab status` shows it, the run exits 4;
#  - taken is lost: another attnlab process (`run SUITE --row taken@1`, the way a scheduler's task
#    trains one row) takes its folder after the run has listed its rows, so the run passes it over
#    without calling it failed, and the other process finishes it.
# (A row held by a search: suite_search.sh; interrupted: suite_resume.sh and
# suite_parallel_interrupt.sh; the same outcomes as Slurm tasks: slurm_outcomes.sh.)
# usage: suite_outcomes.sh ATTNLAB_PROGRAM
source "$(dirname "$0")/scratch.sh"
source "$(dirname "$0")/outcome_suite.sh"
fail() { echo "$1"; shift; for f in "$@"; do echo "--- $f"; cat "$f"; done; exit 1; }

outcome_corpus

# outcomes NAME [RUN OPTIONS...]: runs the suite; once the run has started its first row it is
# stopped (SIGSTOP: a --jobs parent starts no further row, a serial run trains no further step),
# another process takes taken's folder and is stopped in turn, and the run goes on.
outcomes() {
  local name=$1
  shift
  outcome_suite "$name" >"$name.toml"
  "$attnlab" run "$name.toml" --quiet "$@" >"$name.log" 2>&1 &
  local pid=$!
  while ! compgen -G "runs/$name/base-s1-*/lock" >/dev/null; do
    kill -0 $pid 2>/dev/null || fail "$name: the run ended before its first row started" "$name.log"
    sleep 0.02
  done
  kill -STOP $pid
  "$attnlab" run "$name.toml" --row taken@1 --quiet >"$name-taker.log" 2>&1 &
  local taker=$!
  while ! grep -qs "pid $taker " runs/"$name"/taken-s1-*/lock; do
    kill -0 $taker 2>/dev/null || fail "$name: the other process ended before it took the row" "$name-taker.log"
    sleep 0.02
  done
  kill -STOP $taker
  kill -CONT $pid
  set +e
  wait $pid
  local status=$?
  set -e
  kill -CONT $taker
  wait $taker || fail "$name: the other process failed to train taken" "$name-taker.log"

  [ $status -eq 4 ] || fail "$name: the run exited $status, expected 4 (a row failed)" "$name.log"
  grep -q "suite $name: 2 trained, 1 already finished, 1 failed" "$name.log" ||
    fail "$name: the summary does not count 2 trained, 1 passed over, 1 failed" "$name.log"
  grep -q "^bad (seed 1) failed: .*short.tgt" "$name.log" || fail "$name: bad's failure is not logged with its cause" "$name.log"
  grep -q "^taken (seed 1): trained by another process, passed over" "$name.log" ||
    fail "$name: taken is not logged as lost to another process" "$name.log"
  ! grep -q "^taken (seed 1) failed" "$name.log" || fail "$name: taken was called failed" "$name.log"
  for row in base late taken; do
    compgen -G "runs/$name/$row-s1-*/result.json" >/dev/null || fail "$name: $row has no result" "$name.log"
  done
  grep -q "short.tgt" runs/"$name"/bad-s1-*/row-error.txt || fail "$name: bad has no row-error.txt naming the file"
  python3 - "runs/$name/suite.json" <<'PY' || fail "$name: suite.json" "runs/$name/suite.json"
import json, sys
rows = {r["name"]: r for r in json.load(open(sys.argv[1]))["rows"]}
assert rows["bad"]["status"] == "failed" and "short.tgt" in rows["bad"]["error"], rows["bad"]
assert rows["base"]["status"] == "done" and rows["late"]["status"] == "done", rows
assert rows["taken"]["status"] != "failed", rows["taken"]
PY
  "$attnlab" status "runs/$name" >"$name-status.txt" 2>&1 || true
  grep -EA1 "^bad +1 +failed " "$name-status.txt" | grep -q "error: .*short.tgt" ||
    fail "$name: status does not show bad failed with its cause" "$name-status.txt"
  grep -Eq "^taken +1 +done" "$name-status.txt" || fail "$name: status does not show taken done" "$name-status.txt"
}

outcomes serial
outcomes jobs --jobs 2
echo "row outcomes: finished, failed (recorded, exit 4) and lost to another process (passed over), serially and with --jobs 2"
