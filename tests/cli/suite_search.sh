#!/usr/bin/env bash
# Successive halving over a 3 x 3 grid (9 runs: its point equal to the base row is that row;
# rungs 10, 30, 90 steps, eta 3) on the tiny synthetic suite:
#  0. run --dry-run plans every row to the first rung (to the end with --no-prune);
#  1. run serially: every row is measured at rung 0, at most a third of the exhaustive grid's
#     steps are trained, at least one row finishes, every row ends finished or stopped;
#  2. the same suite killed (kill -9) in the middle and run again ends with the same decisions,
#     byte for byte (search.json), and the same finished rows;
#  3. with --jobs 2 it ends in the same kinds of states;
#  4. a stopped row is finished later with --rows NAME --no-prune, from its rung's checkpoint;
#  5. `attnlab status` and `attnlab report` show each row's standing: a stopped row with its rung and
#     metric there, a finished row, the search's steps against the grid's; the CSV has the rungs,
#     the HTML page the rungs and a cross where each stopped run stopped.
# usage: suite_search.sh ATTNLAB_PROGRAM
here=$(cd "$(dirname "$0")" && pwd)  # before scratch.sh moves to the scratch folder
source "$here/scratch.sh"
source "$here/search_grid.sh"
suite() {
  printf '[suite]\nname = "search"\nrun_dir = "%s"\n' "$1"
  search_suite_tables
}
suite runs/a >a.toml
suite runs/b >b.toml
suite runs/c >c.toml


# 0. the dry run's plan: every row to the first rung, the rungs named; with --no-prune to the end
"$attnlab" run a.toml --dry-run >plan.txt 2>&1 || { cat plan.txt; exit 1; }
grep -q "^search: rows go on past each rung (steps 10, 30, 90) only as the search promotes them$" plan.txt &&
  [ "$(grep -c ": train to the first rung, 10 of 90 steps$" plan.txt)" -eq 9 ] || { echo "the dry run's plan"; cat plan.txt; exit 1; }
"$attnlab" run a.toml --dry-run --no-prune | grep -q ": train 90 steps$" || { echo "the dry run with --no-prune"; exit 1; }

# 1. serially
"$attnlab" run a.toml --quiet >a.log 2>&1 || { cat a.log; exit 1; }
standings runs/a >a.txt
cat a.txt
[ "$(wc -l <a.txt)" -eq 9 ] || { echo "not every row is in the search (9: the grid point equal to base is base)"; exit 1; }
! grep -q " open " a.txt || { echo "a row was left between rungs"; exit 1; }
! grep -q " failed " a.txt || { echo "a row failed"; cat a.log; exit 1; }
finished=$(grep -c " finished " a.txt || true)
[ "$finished" -ge 1 ] || { echo "no row finished"; exit 1; }
steps=$(python3 -c "
import json; s = json.load(open('runs/a/search.json'))
print(sum(s['rungs'][len(r['metrics']) - 1] for r in s['rows']))")
echo "steps trained: $steps of $((9 * 90)) for the exhaustive grid; $finished row(s) finished"
[ "$steps" -le $((9 * 90 / 3)) ] || { echo "the search trained more than a third of the grid's steps"; exit 1; }
grep -Eq "promoted: .* to rung 1" a.log || { echo "no promotion was logged"; cat a.log; exit 1; }

# 5. status and the report of the finished search (before step 4 finishes a stopped row)
"$attnlab" status runs/a >status.txt || { cat status.txt; exit 1; }
cat status.txt
grep -q "^search: halving by dev_ppl (lower is better), eta 3, rungs 10, 30, 90 steps; $steps of the full grid's 810 steps trained" status.txt ||
  { echo "status: no summary of the search"; exit 1; }
"$attnlab" report runs/a --format csv --output report.csv
"$attnlab" report runs/a --format markdown --output report.md
"$attnlab" report runs/a --format html --output report.html
head -1 report.csv | grep -q ',error,search_state,rung,rung_steps,rung_metric$' || { echo "the CSV has no rung columns"; exit 1; }
held=0
while read -r key state reached; do
  name=${key%@*}
  if [ "$state" = held ]; then
    rung=$((reached - 1))
    held=$((held + 1))
    grep -Eq "^$name +1 +held .* stopped at rung $rung: dev_ppl [0-9.]+ " status.txt ||
      { echo "status: $key is not shown stopped at rung $rung"; exit 1; }
    grep -Eq "^$name,stopped at rung $rung: dev_ppl [0-9.]+,.*,stopped,$rung,$((10 * 3 ** rung)),[0-9.]+$" report.csv ||
      { echo "report: $key is not stopped at rung $rung in the CSV"; cat report.csv; exit 1; }
    grep -Eq "^\| $name \| .* \| stopped at rung $rung: dev_ppl [0-9.]+ \|" report.md ||
      { echo "report: $key is not stopped at rung $rung in the Markdown table"; exit 1; }
  else
    grep -Eq "^$name +1 +done .* finished " status.txt || { echo "status: $key is not shown finished"; exit 1; }
    grep -Eq "^$name,done,.*,finished,2,90,[0-9.]+$" report.csv || { echo "report: $key is not finished in the CSV"; exit 1; }
  fi
done <a.txt
[ "$(grep -c '<path class="stop" data-row=' report.html)" -ge "$held" ] || { echo "the HTML page marks fewer stops than $held"; exit 1; }
[ "$(grep -c '<line class="guide"' report.html)" -eq 6 ] || { echo "the HTML page does not draw the 3 rungs in both charts"; exit 1; }

# 2. killed in the middle (the decision of some rows written, others not), then run again
"$attnlab" run b.toml --quiet >b1.log 2>&1 &
pid=$!
while ! python3 -c "
import json,sys; s = json.load(open('runs/b/search.json')); sys.exit(sum(len(r['metrics']) for r in s['rows']) < 5)" 2>/dev/null; do
  kill -0 $pid 2>/dev/null || { echo "the search ended before it could be killed"; cat b1.log; exit 1; }
  sleep 0.05
done
kill -9 $pid
wait $pid 2>/dev/null || true
"$attnlab" run b.toml --quiet >b2.log 2>&1 || { cat b2.log; exit 1; }
# The rows' folders differ (their hashes include the run folder's cache); all else is the same.
grep -v '"dir":' runs/a/search.json >a.json
grep -v '"dir":' runs/b/search.json >b.json
cmp a.json b.json || { echo "the resumed search decided otherwise"; diff a.json b.json; exit 1; }
standings runs/b | cmp - a.txt || { echo "the resumed search ended in other states"; exit 1; }

# 3. two rows at once
"$attnlab" run c.toml --jobs 2 --quiet >c.log 2>&1 || { cat c.log; exit 1; }
standings runs/c >c.txt
! grep -Eq " (open|failed) " c.txt || { echo "--jobs 2 left a row open or failed"; cat c.txt c.log; exit 1; }
grep -q " finished " c.txt || { echo "--jobs 2: no row finished"; exit 1; }

# 4. a stopped row finished later, from its checkpoint
stopped=$(awk '$2 == "held" {print $1; exit}' a.txt)
name=${stopped%@*}
"$attnlab" run a.toml --rows "$name" --no-prune --quiet >d.log 2>&1 || { cat d.log; exit 1; }
dir=$(python3 -c "
import json; s = json.load(open('runs/a/search.json'))
print([r['dir'] for r in s['rows'] if r['key'] == '$stopped'][0])")
[ -e "runs/a/$dir/result.json" ] || { echo "the stopped row $stopped did not finish"; cat d.log; exit 1; }
grep -q '"steps": 90' "runs/a/$dir/result.json" || { echo "the finished row did not train to 90 steps"; exit 1; }
grep -q '"resumed":true' "runs/a/$dir/metrics.jsonl" || { echo "the finished row did not resume"; exit 1; }
"$attnlab" status runs/a >status-after.txt || { cat status-after.txt; exit 1; }
grep -Eq "^$name +1 +done .* finished with --no-prune " status-after.txt || { echo "status: $stopped is not finished with --no-prune"; cat status-after.txt; exit 1; }
"$attnlab" report runs/a >report-after.txt
grep -q "^$name (seed 1): trained with --no-prune, past the search's rule$" report-after.txt || { echo "report: no note of --no-prune"; exit 1; }
echo "search: a third of the grid's steps, the same decisions after kill -9, --jobs 2 and --no-prune work; status and report show the standings"
