#!/usr/bin/env bash
# What a suite's [search] saves: the suite searched by successive halving, then the same grid
# trained exhaustively (--no-prune, every row to max_steps, in a folder of its own), and one
# Markdown comparison: the steps each trained, the time they spent training, the row each ranks
# best by the search's metric, and where the search's pick stands in the exhaustive ranking.
#
#   bench/search_savings.sh SUITE.toml OUT [ATTNLAB]    # OUT: the two run folders and compare.md
#
# The suite must read its run folder from ${SEARCH_RUN_DIR} (experiments/search-*.toml do). Both
# runs resume when the script is started again; the wall times are then those of the last start
# only, while the training time (each run's train-log `elapsed`, summed over its starts) counts
# all. Extra options for `attnlab run` (--jobs 2) in RUN_ARGS.
set -euo pipefail
suite=$(realpath "${1:?usage: bench/search_savings.sh SUITE.toml OUT [ATTNLAB]}")
out=$(mkdir -p "${2:?}" && realpath "$2")
attnlab=${3:-build/bin/attnlab}
read -r -a run_args <<<"${RUN_ARGS:-}"
started=$(date +%s)
SEARCH_RUN_DIR=$out/search "$attnlab" run "$suite" --quiet "${run_args[@]}" >"$out/search.log" 2>&1
searched=$(date +%s)
SEARCH_RUN_DIR=$out/full "$attnlab" run "$suite" --no-prune --quiet "${run_args[@]}" >"$out/full.log" 2>&1
finished=$(date +%s)
python3 - "$out" "$suite" $((searched - started)) $((finished - searched)) >"$out/compare.md" <<'PY'
import json, os, sys
out, suite, search_s, full_s = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
state = json.load(open(os.path.join(out, "search", "search.json")))
metric, rungs, eta = state["metric"], state["rungs"], state["eta"]
key = "bleu" if metric == "dev_bleu" else "dev_ppl"
better = (lambda a, b: a > b) if metric == "dev_bleu" else (lambda a, b: a < b)

def training_seconds(folder):
    """Seconds spent in training steps, summed over every run and every start of it (metrics.jsonl's
    `elapsed` restarts at each start): dev evaluations and decoding are not counted."""
    total = 0.0
    for name in os.listdir(folder):
        path = os.path.join(folder, name, "metrics.jsonl")
        if not os.path.exists(path):
            continue
        segment = 0.0
        for line in open(path):
            try:
                e = json.loads(line)
            except ValueError:
                continue  # a torn last line
            if e.get("kind") == "start":
                total, segment = total + segment, 0.0
            elif e.get("kind") == "train":
                segment = max(segment, e.get("elapsed", 0.0))
        total += segment
    return total

def results(folder):
    rows = {}
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name, "result.json")
        if os.path.exists(path):
            r = json.load(open(path))
            rows[f'{r["row"]}@{r["seed"]}'] = r
    return rows

full = results(os.path.join(out, "full"))
ranked = sorted(full.values(), key=lambda r: r[key], reverse=(metric == "dev_bleu"))
rank = {f'{r["row"]}@{r["seed"]}': i + 1 for i, r in enumerate(ranked)}
full_steps = sum(r["steps"] for r in full.values())
search_steps = sum(rungs[len(r["metrics"]) - 1] for r in state["rows"] if r["metrics"])
finished = [r for r in state["rows"] if len(r["metrics"]) == len(rungs)]
pick = None
for r in finished:
    if r["metrics"][-1] is not None and (pick is None or better(r["metrics"][-1], pick["metrics"][-1])):
        pick = r
stopped = {}
for r in state["rows"]:
    if len(r["metrics"]) < len(rungs):
        stopped[len(r["metrics"]) - 1] = stopped.get(len(r["metrics"]) - 1, 0) + 1

print(f"# {os.path.basename(suite)}: successive halving against the exhaustive grid\n")
print(f"{len(state['rows'])} rows, metric {metric}, eta {eta}, rungs {rungs} steps.\n")
print("| | exhaustive grid | search |")
print("| --- | ---: | ---: |")
print(f"| training steps | {full_steps} | {search_steps} ({100.0 * search_steps / full_steps:.1f} %) |")
full_train_s = training_seconds(os.path.join(out, "full"))
search_train_s = training_seconds(os.path.join(out, "search"))
print(f"| training time, summed over runs (s) | {full_train_s:.0f} | {search_train_s:.0f} "
      f"({100.0 * search_train_s / full_train_s:.1f} %) |")
print(f"| wall time of this start (s) | {full_s} | {search_s} |")
print(f"| rows trained to the end | {len(full)} | {len(finished)} |")
print(f"| best row | {ranked[0]['row']} ({key} {ranked[0][key]:.3f}) | "
      + (f"{pick['key'].split('@')[0]} ({metric} {pick['metrics'][-1]:.3f}), rank {rank.get(pick['key'], '?')} of "
         f"{len(ranked)} in the exhaustive grid |" if pick else "none |"))
print()
print("Rows stopped at each rung: " + ", ".join(f"rung {k} ({rungs[k]} steps): {n}" for k, n in sorted(stopped.items())) + "\n")
print(f"The exhaustive grid's ten best by {key} (dev BLEU beside), and how far the search took them:\n")
print(f"| rank | row | settings | {key} | BLEU | search: rungs reached |")
print("| ---: | --- | --- | ---: | ---: | ---: |")
suite_state = json.load(open(os.path.join(out, "full", "suite.json")))
settings = {f'{r["name"]}@{r["seed"]}': " ".join(f"{k}={v}" for k, v in r.get("settings", [])) for r in suite_state["rows"]}
reached = {r["key"]: len(r["metrics"]) for r in state["rows"]}
for i, r in enumerate(ranked[:10]):
    k = f'{r["row"]}@{r["seed"]}'
    print(f"| {i + 1} | {r['row']} | {settings.get(k, '')} | {r[key]:.3f} | {r['bleu']:.2f} | {reached.get(k, 0)} of {len(rungs)} |")
PY
cat "$out/compare.md"
