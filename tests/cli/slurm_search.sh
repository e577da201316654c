#!/usr/bin/env bash
# The successive-halving search of suite_search.sh (the same 3 x 3 grid, rungs 10, 30, 90 steps,
# eta 3) as a Slurm job array on a real one-node cluster (slurm_cluster.sh), several 1-CPU tasks at
# once. Each task trains its row to its rung and decides under the lock of the suite's search
# folder, then trains the rows promoted since their own tasks ended (--take-promoted). After the
# queue empties:
#  1. every row is finished or held at a rung (none failed, none left between rungs), at least one
#     finished; the steps trained are printed against the exhaustive grid's;
#  2. the decisions are those of a current view: each row was measured once at each rung it
#     reached and only at rungs it was allowed to (metrics against allowed); no step was trained
#     twice (each row's metrics.jsonl); at every rung the tasks recorded their results one at a
#     time (the logs count 1..n rows measured there) and the rows that went on are what the rule
#     promotes in that order, the best of every closed rung among them;
#  3. submitting again sends nothing: every row is finished or held by the search.
# Whether a promoted row was trained by another task (its log: "== promoted row") or went on
# within its own task depends on timing: the test says which happened and requires neither.
# usage: slurm_search.sh ATTNLAB_PROGRAM
here=$(cd "$(dirname "$0")" && pwd)  # before scratch.sh moves to the scratch folder
source "$here/scratch.sh"
source "$here/slurm_cluster.sh"
source "$here/search_grid.sh"

suite() {
  printf '[suite]\nname = "search"\n[suite.slurm]\ncpus = 1\ntime = "00:30:00"\n'
  search_suite_tables
}
suite >suite.toml
run_dir=runs/search


# --- the array ----------------------------------------------------------------------------------
start=$SECONDS
"$attnlab" run suite.toml --slurm >submit.txt 2>submit.log || { cat submit.txt submit.log; exit 1; }
cat submit.txt
grep -q "9 row(s) submitted as Slurm job array" submit.txt ||
  { echo "the search was not submitted as 9 tasks (the grid point equal to base is base)"; cat submit.log; exit 1; }
script=$(ls "$run_dir"/slurm/array-*.sh)
grep -q -- '--take-promoted' "$script" || { echo "the tasks do not take promoted rows"; cat "$script"; exit 1; }
# Several tasks at once: the 1-CPU tasks share the node's CPUs (OverSubscribe).
most=0
several() {
  local n
  n=$(squeue --noheader --states=RUNNING | wc -l)
  [ "$n" -le "$most" ] || most=$n
  queue_empty
}
wait_for 300 "the search's tasks" several
echo "array done in $((SECONDS - start))s; at most $most task(s) seen running at once"

# --- 1. where the rows ended ----------------------------------------------------------------------
standings "$run_dir" >standings.txt
cat standings.txt
logs() { for log in "$run_dir"/*/run.log; do echo "--- $log"; tail -n 20 "$log"; done; }
[ "$(wc -l <standings.txt)" -eq 9 ] || { echo "not every row is in the search"; exit 1; }
! grep -q " failed " standings.txt || { echo "a row failed"; logs; exit 1; }
! grep -q " open " standings.txt || { echo "a row was left between rungs (promoted, never trained on)"; logs; exit 1; }
finished=$(grep -c " finished " standings.txt || true)
[ "$finished" -ge 1 ] || { echo "no row finished"; logs; exit 1; }
# Serially the search trains at most a third of the grid's steps (suite_search.sh). With tasks at
# once a rung may promote a row before better rows reach it (a promotion is never taken back) and
# the search trains more: the decisions below say which rows, and check the rule's own bound.
steps=$(python3 -c "
import json; s = json.load(open('$run_dir/search.json'))
print(sum(s['rungs'][len(r['metrics']) - 1] for r in s['rows'] if r['metrics']))")
echo "steps trained: $steps of $((9 * 90)) for the exhaustive grid ($((9 * 90 / 3)) a third); $finished row(s) finished"
[ "$steps" -lt $((9 * 90)) ] || { echo "the search trained the whole grid"; exit 1; }

# --- 2. the decisions -----------------------------------------------------------------------------
# Every task logs each result it records with the number of rows measured at that rung once it is
# in ("N row(s) measured there"), read under the lock: at each rung these are 1..n, once each, when
# no two tasks decided on the same view. Replaying the rule in that order gives every promotion.
python3 - "$run_dir" <<'PY' || exit 1
import glob, json, os, re, sys
folder = sys.argv[1]
s = json.load(open(os.path.join(folder, "search.json")))
rungs, eta, rows = s["rungs"], s["eta"], s["rows"]
last = len(rungs) - 1
better_high = s["metric"] == "dev_bleu"
index = {r["key"]: i for i, r in enumerate(rows)}
bad = []

# Each row measured once at each rung it reached, and only where it was allowed to train: a row
# held at rung k has k + 1 metrics and allowed k; a finished one has every rung's.
for r in rows:
    n, allowed = len(r["metrics"]), r["allowed"]
    done = os.path.exists(os.path.join(folder, r["dir"], "result.json"))
    if done and (n != len(rungs) or allowed != last):
        bad.append(f"{r['key']}: finished with {n} rung metric(s) and allowed {allowed} ({len(rungs)} rungs)")
    if not done and n != allowed + 1:
        bad.append(f"{r['key']}: {n} rung metric(s) with allowed {allowed}: measured twice or trained past its rung")
    # The trainer's log: each train step and dev evaluation once, the last evaluation at the rung
    # reached.
    events = [json.loads(line) for line in open(os.path.join(folder, r["dir"], "metrics.jsonl"))]
    for kind in ("train", "dev"):
        at = [e["step"] for e in events if e["kind"] == kind]
        if len(at) != len(set(at)) or at != sorted(at):
            bad.append(f"{r['key']}: a {kind} step logged twice or out of order: {at}")
        if kind == "dev" and n and at and at[-1] != rungs[n - 1]:
            bad.append(f"{r['key']}: trained to step {at[-1]}, measured up to rung {n - 1} ({rungs[n - 1]} steps)")
    # The metric recorded at a rung below the last is the dev evaluation the trainer logged there.
    dev = {e["step"]: e["dev_ppl"] for e in events if e["kind"] == "dev"}
    for k, m in enumerate(r["metrics"][:last]):
        if s["metric"] == "dev_ppl" and m is not None and abs(dev.get(rungs[k], float("nan")) - m) > 1e-9 * m:
            bad.append(f"{r['key']}: rung {k} recorded {m}, the trainer logged {dev.get(rungs[k])} at step {rungs[k]}")

# The recorded results, from every task's log (a task logs the rows it trains, its own and those
# it took).
decision = re.compile(r"^(\S+) \(seed (\d+)\): (?:no )?dev_(?:ppl|bleu)(?: \S+)? at rung (\d+) \(\d+ steps\), "
                      r"(\d+) row\(s\) measured there")
arrivals = {k: [] for k in range(len(rungs))}
for log in glob.glob(os.path.join(folder, "*", "run.log")):
    for line in open(log, errors="replace"):
        m = decision.match(line)
        if m:
            arrivals[int(m.group(3))].append((int(m.group(4)), f"{m.group(1)}@{m.group(2)}"))

# search_state.cpp's rung_closed: no row that has not failed can still reach rung k.
def closed(k):
    c = []
    for j in range(k + 1):
        c.append(all(r["failed"] or len(r["metrics"]) > j or (r["allowed"] < j and c[r["allowed"]]) for r in rows))
    return c[-1]

def rank(entries):  # the best first; ties: suite order
    return sorted(entries, key=lambda e: (-e[1] if better_high else e[1], index[e[0]]))

for k in range(len(rungs)):
    measured = sorted(r["key"] for r in rows if len(r["metrics"]) > k)
    counts = sorted(n for n, _ in arrivals[k])
    if counts != list(range(1, len(measured) + 1)) or sorted(key for _, key in arrivals[k]) != measured:
        bad.append(f"rung {k}: {len(measured)} row(s) measured, the logs count {counts} for "
                   f"{sorted(key for _, key in arrivals[k])}: a result recorded on a stale view, twice or not logged")
        continue
    if k == last:
        continue
    # The rule, replayed in the order the results came in: after each one, the best floor(n / eta)
    # of the n rows measured go on; once the rung is closed, the best one.
    promoted, seen = set(), []
    for _, key in sorted(arrivals[k]):
        m = rows[index[key]]["metrics"][k]
        if m is not None:
            seen.append((key, m))
        promoted |= {key for key, _ in rank(seen)[:len(seen) // eta]}
    if closed(k) and seen:
        promoted.add(rank(seen)[0][0])
    went_on = {r["key"] for r in rows if len(r["metrics"]) > k and r["allowed"] > k}
    order = ", ".join(key for _, key in sorted(arrivals[k]))
    final = {key for key, _ in rank(seen)[:max(len(seen) // eta, 1 if closed(k) and seen else 0)]}
    early = sorted(went_on - final)
    print(f"rung {k} ({rungs[k]} steps): results in the order {order}; went on: {', '.join(sorted(went_on))}"
          + (f" ({', '.join(early)} before better rows came in)" if early else ""))
    if went_on != promoted:
        bad.append(f"rung {k}: {sorted(went_on)} went on, the rule in that order promotes {sorted(promoted)}")
    # However the results came in, each arrival promotes at most one more row.
    n = len(seen)
    if len(went_on) > (n - eta + 1 if n >= eta else 1):
        bad.append(f"rung {k}: {len(went_on)} of {n} rows went on")
    if closed(k) and seen and rank(seen)[0][0] not in went_on:
        bad.append(f"rung {k} is closed and its best row {rank(seen)[0][0]} did not go on")
for k in range(len(rungs)):
    if not closed(k):
        bad.append(f"rung {k} still open with the queue empty")
if bad:
    print("the search's decisions are not those of a current view:\n  " + "\n  ".join(bad))
    sys.exit(1)
PY

# Who trained each promotion: a task that took the row once its own row was done or held ("==
# promoted row" in that task's run.log, before the row's result at the next rung), or the row's
# own task going on past its rung. Which of the two happens depends on timing: both are fine.
python3 - "$run_dir" <<'PY' || exit 1
import glob, json, os, re, sys
folder = sys.argv[1]
s = json.load(open(os.path.join(folder, "search.json")))
decision = re.compile(r"^(\S+) \(seed (\d+)\): (?:no )?dev_(?:ppl|bleu)(?: \S+)? at rung (\d+) ")
trained_by = {}  # (key, rung) -> how
for log in glob.glob(os.path.join(folder, "*", "run.log")):
    task, current, took = "?", None, False
    for line in open(log, errors="replace"):
        if m := re.match(r"== Slurm task \S+ on \S+: row (\S+)", line):
            task, current, took = m.group(1), m.group(1), False
        elif m := re.match(r"== promoted row (\S+) \(seed (\d+)\)(?: taken by the task of (\S+))?", line):
            current, took = f"{m.group(1)}@{m.group(2)}", True
            task = m.group(3) or task
        elif (m := decision.match(line)) and int(m.group(3)) > 0:
            key = f"{m.group(1)}@{m.group(2)}"
            how = "?" if key != current else f"taken by the task of {task}" if took else "its own task"
            trained_by[(key, int(m.group(3)))] = how
taken = own = 0
for r in s["rows"]:
    for k in range(1, len(r["metrics"])):
        how = trained_by.get((r["key"], k))
        if how is None or how == "?":
            sys.exit(f"{r['key']}: no task's log shows who trained it to rung {k}")
        print(f"  {r['key']} to rung {k}: {how}")
        own += how == "its own task"
        taken += how != "its own task"
print(f"promotions trained by a task that took the row (== promoted row): {taken}; within the row's own task: {own}")
if taken + own == 0:
    sys.exit("no row went past rung 0")
PY

# --- 3. nothing left to submit --------------------------------------------------------------------
"$attnlab" run suite.toml --slurm >again.txt 2>again.log || { cat again.txt again.log; exit 1; }
grep -q "nothing to submit" again.txt || { echo "a second submission sent rows again"; cat again.txt again.log; exit 1; }
held=$(grep -c " held " standings.txt || true)
[ "$(grep -Ec ": stopped at rung [0-9]+ by the search$" again.log || true)" -eq "$held" ] ||
  { echo "the second submission did not name the $held row(s) the search holds as stopped"; cat again.log; exit 1; }
[ -z "$(squeue --noheader)" ] || { echo "the second submission queued a task"; squeue; exit 1; }
"$attnlab" status "$run_dir" >status.txt || { cat status.txt; exit 1; }
grep -v '^ *|' status.txt
echo "Slurm search: every row finished or held at its rung, each decision the rule's on a current view, nothing to resubmit"
