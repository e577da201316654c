#!/usr/bin/env bash
# A grid run two rows at a time shares the machine and its runs:
# - each row that leaves experiment.threads at 0 trains with its share of the cores (read back from
#   the thread count its manifest records); a row that sets threads keeps them;
# - the grid point equal to the base configuration is the same run: trained once, shown as the
#   same run by check, status and the report;
# - the grid point a plugin cannot serve (additive cannot rotate for rope) is skipped with its reason
#   under unsupported = "skip", refused as a whole under the default "error", and trained with
#   the fallback under "fallback";
# - a changed row still retrains.
# usage: suite_share.sh ATTNLAB_PROGRAM
source "$(dirname "$0")/scratch.sh"
fail() { echo "$1"; shift; for f in "$@"; do echo "--- $f"; cat "$f"; done; exit 1; }
cores=$(nproc)
share=$((cores / 2 > 0 ? cores / 2 : 1))
suite() {  # suite UNSUPPORTED_LINE OWN_THREADS_D_FF
  printf '[suite]\nname = "share"\n'
  tiny_suite_base
  cat <<TOML
[base.training]
batch_tokens = 500
max_steps = 20
warmup_steps = 10
eval_every = 20
checkpoint_every = 10
checkpoint_every_seconds = 0
[rows.own-threads]
"experiment.threads" = 1
"model.d_ff" = $2
[grids.pos]
$1
axes = [ { "model.attention.name" = ["scaled_dot", "additive"] }, { "model.positional.name" = ["sinusoidal", "rope"] } ]
TOML
}

# The default: the grid point additive + rope refuses the suite, naming the row and the way out.
suite "" 48 >suite.toml
if "$attnlab" check suite.toml >check.log 2>&1; then fail "check accepted a row additive cannot serve" check.log; fi
grep -q "row pos-04" check.log && grep -q 'unsupported = "fallback" or "skip"' check.log ||
  fail "the refusal does not name the row and the setting" check.log
if "$attnlab" run suite.toml --jobs 2 >run.log 2>&1; then fail "run accepted a row additive cannot serve" run.log; fi
[ ! -d runs/share ] || [ -z "$(ls runs/share | grep -- -s1-)" ] || fail "a refused suite trained rows" run.log

# unsupported = "skip": check lists what each row gets.
suite 'unsupported = "skip"' 48 >suite.toml
"$attnlab" check suite.toml --jobs 2 >check.log 2>&1 || fail "check failed" check.log
grep -Eq "^pos-01 .*same as base" check.log || fail "check does not show pos-01 as the base's run" check.log
grep -Eq "^pos-04 .*skipped" check.log && grep -q "row pos-04 is skipped" check.log ||
  fail "check does not list pos-04 as skipped" check.log
grep -Eq "^base .* $share +cpu +own" check.log || fail "check does not give base $share thread(s)" check.log
grep -Eq "^own-threads .* 1 +cpu +own" check.log || fail "check does not keep own-threads' 1 thread" check.log

"$attnlab" run suite.toml --jobs 2 >run.log 2>&1 || fail "the suite failed" run.log
grep -q "1 the same run as another row, 1 skipped (unsupported)" run.log || fail "the summary does not count them" run.log
folders=$(ls runs/share | grep -c -- -s1- || true)
[ "$folders" -eq 4 ] || fail "$folders run folders, expected 4 (base, own-threads, pos-02, pos-03)" run.log
! compgen -G "runs/share/pos-01-*" >/dev/null || fail "pos-01 was trained apart from base" run.log
threads_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["machine"]["threads"])' "$1"/manifest.json; }
for dir in runs/share/base-s1-* runs/share/pos-02-s1-* runs/share/pos-03-s1-*; do
  [ "$(threads_of "$dir")" -eq "$share" ] || fail "$dir trained with $(threads_of "$dir") threads, expected $share" run.log
done
[ "$(threads_of runs/share/own-threads-s1-*)" -eq 1 ] || fail "own-threads did not keep its 1 thread" run.log
# The OpenMP threads spin briefly before they sleep (apps/attnlab/wait_policy.cpp), unless the
# environment says otherwise.
wait_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["machine"]["openmp_wait"])' "$1"/manifest.json; }
if [ -z "${OMP_WAIT_POLICY:-}${GOMP_SPINCOUNT:-}" ]; then
  [ "$(wait_of runs/share/base-s1-*)" = "GOMP_SPINCOUNT=1000" ] || fail "base ran with OpenMP waits $(wait_of runs/share/base-s1-*)"
fi

"$attnlab" status runs/share >status.log 2>&1 || fail "status failed" status.log
grep -Eq "^pos-01 .*done.*same run as base" status.log || fail "status does not show pos-01 as base's run" status.log
grep -Eq "^pos-04 .*skipped" status.log || fail "status does not show pos-04 as skipped" status.log
"$attnlab" report runs/share --format csv --output report.csv >/dev/null 2>&1 || fail "report failed"
grep -q "^pos-01,done" report.csv && grep -q "same run as base" report.csv || fail "the report does not show pos-01" report.csv
grep -q "^pos-04,skipped" report.csv || fail "the report does not show pos-04 as skipped" report.csv

# unsupported = "fallback": pos-04 trains with scaled_dot; a changed row retrains, the rest are done.
suite 'unsupported = "fallback"' 40 >suite.toml
"$attnlab" run suite.toml --jobs 2 >rerun.log 2>&1 || fail "the rerun failed" rerun.log
grep -q "^suite share: 2 trained, 3 already finished" rerun.log ||
  fail "expected pos-04 and the changed own-threads trained, 3 rows finished earlier" rerun.log
grep -q "using its fallback 'scaled_dot'" runs/share/pos-04-s1-*/run.log || fail "pos-04 did not say it used the fallback" runs/share/pos-04-s1-*/run.log
echo "suite share: $share thread(s) per row of 2 on $cores cores, the base's grid point trained once, additive + rope skipped, then served by the fallback"
