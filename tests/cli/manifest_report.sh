#!/usr/bin/env bash
# Every row of a suite gets a manifest.json; the report links each and marks a row whose manifest
# disagrees with the base row's in something the row does not set itself (here: the machine,
# edited after the fact), while a row's own setting (its positional plugin) is not flagged. A row
# is evaluated on its test set by `attnlab eval`, which finds the suite's data cache.
# usage: manifest_report.sh ATTNLAB_PROGRAM
source "$(dirname "$0")/scratch.sh"
{
  printf '[suite]\nname = "manifests"\n'
  tiny_suite_base
  cat <<'TOML'
[base.training]
batch_tokens = 600
max_steps = 10
warmup_steps = 5
eval_every = 10
checkpoint_every = 10
checkpoint_every_seconds = 0
[base.eval]
beam = 1
[rows.rope]
"model.positional.name" = "rope"
[rows.wider]
"model.d_ff" = 48
TOML
} >suite.toml
"$attnlab" run suite.toml --quiet >run.log 2>&1 || { cat run.log; exit 1; }
for row in base rope wider; do
  m=$(compgen -G "runs/manifests/$row-s1-*/manifest.json")
  grep -q '"vocabulary"' "$m"
  grep -q '"description"' "$m"
done
# A suite row evaluates on its test set from the suite's folder (its data cache is relative to it).
"$attnlab" eval "$(compgen -G 'runs/manifests/rope-s1-*')" --test >eval.log 2>&1 || { cat eval.log; exit 1; }
"$attnlab" report runs/manifests --format markdown >same.md
grep -q "test (rope seed 1)" same.md || { cat same.md; exit 1; }
grep -q "manifest of rope (seed 1): " same.md
! grep -q "differs from the base row" same.md || { echo "a row's own plugin was flagged"; cat same.md; exit 1; }
# Another machine for one row.
m=$(compgen -G "runs/manifests/wider-s1-*/manifest.json")
sed -i 's/"host": "[^"]*"/"host": "elsewhere"/' "$m"
"$attnlab" report runs/manifests --format markdown >differs.md
grep -q '| differs |' differs.md || { cat differs.md; exit 1; }
grep -q 'manifest of wider (seed 1): .*differs from the base row.s in machine.host: ".*" vs "elsewhere"' differs.md \
  || { cat differs.md; exit 1; }
echo "manifests written, linked and compared"
