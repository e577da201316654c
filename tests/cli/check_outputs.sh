#!/usr/bin/env bash
# attnlab check's outputs for programs and its exit status:
#  - with --format csv, standard output is the table alone (every line a CSV record of the header's
#    width), the rest (the plan, notes, the verdict) on standard error;
#  - --rows checks only the rows named, and refuses a name the suite lacks with the closest one;
#  - a value that came from an environment variable (${NAME} in the suite) is named with it in an
#    error about it;
#  - a valid suite whose rows ask for a device this machine lacks (cuda:63 here, absent anywhere)
#    exits 3, "valid but it cannot run here", naming the row and the device; runnable, it exits 0.
# usage: check_outputs.sh ATTNLAB_PROGRAM
source "$(dirname "$0")/scratch.sh"
fail() { echo "FAIL: $1"; shift; for f in "$@"; do echo "--- $f"; cat "$f"; done; exit 1; }

{ echo '[suite]'; echo 'name = "outputs"'; tiny_suite_base; echo '[rows.wide]'; echo '"model.d_ff" = 96'; } >suite.toml
"$attnlab" check suite.toml --format csv >table.csv 2>prose.txt || fail "check --format csv exited $?" prose.txt
python3 - table.csv <<'PY' || fail "standard output is not the table alone" table.csv
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
assert rows and rows[0][:3] == ["row", "seed", "settings"], rows[:1]
assert [r[0] for r in rows[1:]] == ["base", "wide"], [r[0] for r in rows]
assert all(len(r) == len(rows[0]) for r in rows), [len(r) for r in rows]
PY
grep -q "the suite is valid: 2 rows" prose.txt || fail "the verdict is not on standard error" prose.txt

"$attnlab" check suite.toml --rows wide --format csv >wide.csv 2>/dev/null || fail "check --rows wide" wide.csv
[[ $(cut -d, -f1 wide.csv | tr '\n' ' ') == "row wide " ]] || fail "check --rows wide did not check wide alone" wide.csv
set +e
"$attnlab" check suite.toml --rows wdie >rows.txt 2>&1
status=$?
set -e
[[ $status -eq 1 ]] && grep -qF "suite outputs has no row 'wdie' (valid: base, wide); did you mean 'wide'?" rows.txt ||
  fail "check --rows with an unknown row (exit $status)" rows.txt

{ echo '[vars]'; echo 'attention = "${CHECK_TEST_ATTENTION:-scaled_dot}"'; cat suite.toml;
  echo '[rows.env]'; echo '"model.attention.name" = "${attention}"'; } >env.toml
set +e
CHECK_TEST_ATTENTION=scaled-dot "$attnlab" check env.toml >env.txt 2>&1
status=$?
set -e
[[ $status -eq 1 ]] && grep -qF "unknown attention plugin 'scaled-dot' (valid: " env.txt &&
  grep -qF "(the value 'scaled-dot' came from the environment variable CHECK_TEST_ATTENTION)" env.txt ||
  fail "an unknown plugin from the environment (exit $status) is not named with its variable" env.txt

{ cat suite.toml; echo '[rows.gpu]'; echo '"experiment.device" = "cuda:63"'; } >gpu.toml
set +e
"$attnlab" check gpu.toml >gpu.txt 2>&1
status=$?
set -e
[[ $status -eq 3 ]] || fail "check of a suite needing an absent device exited $status, expected 3" gpu.txt
grep -q "warning: row gpu: device cuda:63 is not available" gpu.txt || fail "the row and its device are not named" gpu.txt
grep -q "the suite is valid, but it cannot run here: 1 row(s) need a device this machine lacks" gpu.txt ||
  fail "the verdict does not say why it cannot run" gpu.txt
echo "check: csv on standard output alone; --rows; environment named; exit 3 for a device this machine lacks"
