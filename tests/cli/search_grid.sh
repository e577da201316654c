# The tiny search both search tests run (suite_search.sh, slurm_search.sh): a 3 x 3 grid (9 runs:
# its point equal to the base row is that row), rungs 10, 30, 90 steps, eta 3. Sourced after
# scratch.sh (tiny_suite_base).

# search_suite_tables: every table of the suite but [suite].
search_suite_tables() {
  printf '[base.experiment]\nthreads = 1\n'
  tiny_suite_base
  cat <<'TOML'
[base.training]
batch_tokens = 500
max_steps = 90
warmup_steps = 10
eval_every = 10
checkpoint_every = 10
checkpoint_every_seconds = 0
keep_checkpoints = 2
[base.eval]
beam = 1
[search]
method = "halving"
metric = "dev_ppl"
eta = 3
first_rung = 10
[grids.g]
axes = [ { "training.lr_scale" = [0.25, 1.0, 4.0] }, { "model.d_ff" = [16, 64, 128] } ]
TOML
}

# standings FOLDER: one "key standing" line per row, from search.json and the rows' result.json.
standings() {
  python3 - "$1" <<'PY'
import json, os, sys, glob
s = json.load(open(os.path.join(sys.argv[1], "search.json")))
last = len(s["rungs"]) - 1
for r in s["rows"]:
    done = os.path.exists(os.path.join(sys.argv[1], r["dir"], "result.json"))
    reached = len(r["metrics"])
    state = "finished" if done else "failed" if r["failed"] else "held" if reached > r["allowed"] else "open"
    print(r["key"], state, reached)
PY
}
