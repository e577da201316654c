#!/usr/bin/env bash
# Settings from the command line: --set on train, check and run (over every row's base, the rows'
# own changes still winning, and given to --jobs children), its mistakes named as coming from the
# command line, attnlab config's resolved TOML with each value's source, and run --dry-run's plan.
# usage: settings.sh ATTNLAB_PROGRAM
source "$(dirname "$0")/scratch.sh"
fail() { echo "FAIL: $1"; shift; for f in "$@"; do echo "--- $f"; cat "$f"; done; exit 1; }
expect_error() {  # expect_error MESSAGE COMMAND...: exits 1 saying MESSAGE
  local message=$1
  shift
  set +e
  "$@" >err.txt 2>&1
  local status=$?
  set -e
  [[ $status -eq 1 ]] || fail "$* exited $status, expected 1" err.txt
  grep -qF -- "$message" err.txt || fail "$* does not say: $message" err.txt
}

tiny_experiment tiny >exp.toml
"$attnlab" train exp.toml --set training.max_steps=3 --set training.checkpoint_every=3 --set training.eval_every=3 \
  >train.txt 2>&1 || fail "train --set" train.txt
grep -q "^tiny: 3 steps" train.txt || fail "train did not take --set training.max_steps=3" train.txt
expect_error "--set model.dropot=0.2:1:5: model.dropot: unknown key" "$attnlab" train exp.toml --set model.dropot=0.2
grep -q "did you mean 'dropout'" err.txt || fail "no suggestion for a misspelt --set key" err.txt
expect_error "--set training.max_steps=abc:1:5: training.max_steps: expected an integer, got string 'abc'" \
  "$attnlab" check exp.toml --set training.max_steps=abc
expect_error "--set: expects KEY=VALUE with a dotted key (model.dropout=0.2), got 'model.dropout'" \
  "$attnlab" check exp.toml --set model.dropout

"$attnlab" config exp.toml --set model.dropout=0.2 --set model.attention.name=flash >config.txt 2>&1 ||
  fail "config" config.txt
grep -qx "dropout = 0.2  # --set model.dropout=0.2:1:5" config.txt || fail "config: the --set value's source" config.txt
grep -qx "d_k = 8  # default" config.txt || fail "config: a default" config.txt
grep -qE "^d_model = 32  # exp.toml:[0-9]+:[0-9]+$" config.txt || fail "config: the file's value" config.txt
grep -qx "name = 'flash'  # --set model.attention.name=flash:1:5" config.txt || fail "config: a bare word" config.txt

# A suite: --set over the base of every row; the row's own d_ff wins; --jobs children train the
# rows with the same settings (4 steps each, not the suite's 30).
{ echo '[suite]'; echo 'name = "set"'; tiny_suite_base; echo '[base.training]'; echo 'max_steps = 30';
  echo 'checkpoint_every = 10'; echo 'eval_every = 30'; echo '[rows.narrow]'; echo '"model.d_ff" = 48'; } >suite.toml
"$attnlab" check suite.toml --set model.d_ff=96 --set training.max_steps=4 >check.txt 2>&1 || fail "check --set" check.txt
grep -qE "^base +1 +- +1 +32 +96 " check.txt || fail "check: the base row does not take --set model.d_ff=96" check.txt
grep -qE "^narrow +1 +model.d_ff=48 +1 +32 +48 " check.txt || fail "check: the row's own d_ff does not win" check.txt
"$attnlab" run suite.toml --jobs 2 --quiet --set training.max_steps=4 --set training.checkpoint_every=4 \
  --set training.eval_every=4 >run.txt 2>&1 || fail "run --jobs 2 --set" run.txt
for row in base narrow; do
  python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); assert r["steps"] == 4, r["steps"]' \
    runs/set/$row-s1-*/result.json || fail "row $row did not train 4 steps under --jobs 2" run.txt runs/set/$row-s1-*/run.log
done
# run --dry-run without Slurm: the plan, nothing trained. With the same settings both rows are
# finished; without them they are other runs, still to train.
"$attnlab" run suite.toml --dry-run --set training.max_steps=4 --set training.checkpoint_every=4 \
  --set training.eval_every=4 >plan.txt 2>&1 || fail "run --dry-run" plan.txt
[[ $(grep -c ": nothing: finished$" plan.txt) -eq 2 ]] && grep -q "^0 row(s) to train$" plan.txt ||
  fail "the plan does not see the finished rows" plan.txt
"$attnlab" run suite.toml --dry-run >plan2.txt 2>&1 || fail "run --dry-run" plan2.txt
[[ $(grep -c ": train 30 steps$" plan2.txt) -eq 2 ]] || fail "the plan without --set" plan2.txt
compgen -G "runs/set/*-s1-*" | wc -l | grep -qx 2 || fail "the dry run made run folders" plan2.txt
echo "settings: --set on train, check, run (--jobs children included) and config, mistakes named; run --dry-run"
