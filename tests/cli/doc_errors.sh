#!/usr/bin/env bash
# The error messages the docs show are the program's: each sample line below must be in its doc
# word for word, and the program, given a file that makes that mistake, must say it. The sample's
# leading place (file:line:column, of the file the doc imagines) is not compared, and "..." in a
# sample stands for what the doc leaves out.
# usage: doc_errors.sh ATTNLAB_PROGRAM REPOSITORY
root=$2
source "$(dirname "$0")/scratch.sh"
fail() { echo "FAIL: $1"; shift; for f in "$@"; do echo "--- $f"; cat "$f"; done; exit 1; }
checked=0

# said DOC SAMPLE OUTPUT: SAMPLE is a line of DOC, and OUTPUT says it (its place aside).
said() {
  grep -qxF -- "$2" "$root/$1" || fail "$1 has no line: $2"
  python3 - "$2" "$3" <<'PY' || fail "$1's sample is not what the program says: $2" "$3"
import re, sys
sample, output = sys.argv[1], open(sys.argv[2]).read()
tail = re.split(r"[\w.-]+\.toml:\d+:\d+: ", sample)[-1]
pattern = ".*".join(re.escape(part) for part in tail.split("..."))
sys.exit(0 if re.search(pattern, output) else 1)
PY
  checked=$((checked + 1))
}
# check_says DOC SAMPLE FILE: attnlab check FILE fails, saying SAMPLE.
check_says() {
  set +e
  "$attnlab" check "$3" >said.txt 2>&1
  local status=$?
  set -e
  ((status == 1)) || fail "attnlab check $3 exited $status, not 1" said.txt
  said "$1" "$2" said.txt
}

printf '[data.synthetic]\n' >base.toml
# Each case: the doc, its sample, and the file (printf's format) that makes the mistake; a suite's
# "S:" stands for its [suite] table with base.toml as its base.
cases=(
  docs/experiments.md "exp.toml:21:1: training.max_step: unknown key (valid keys here: accumulate, ..., weight_decay_exclude); did you mean 'max_steps'?"
  '[data.synthetic]\n[training]\nmax_step = 5\n'
  docs/experiments.md "exp.toml:3:13: training.max_steps: expected an integer, got string 'abc'"
  '[data.synthetic]\n[training]\nmax_steps = "abc"\n'
  docs/experiments.md "exp.toml:15:1: model.attention: unknown attention plugin 'performer' (valid: additive, ..., scaled_dot)"
  '[data.synthetic]\n[model.attention]\nname = "performer"\n'
  docs/experiments.md 'exp.toml:14:13: training.precision: expected "fp32", "tf32" or "bf16", got "fp16"'
  '[data.synthetic]\n[training]\nprecision = "fp16"\n'
  docs/experiments.md "table3.toml:40:1: rows.A1: model.headz: unknown key (valid keys here: attention, ..., positional); did you mean 'heads'?"
  'S:[rows.A1]\n"model.headz" = 4\n'
  docs/experiments.md "table3.toml:3:1: suite.bsae: unknown key (valid keys here: base, name, reference, run_dir, seeds, slurm, unsupported); did you mean 'base'?"
  '[suite]\nname = "t"\nbsae = "base.toml"\n'
  docs/experiments.md "table3.toml:41:17: rows.A1: model.heads: expected an integer, got string 'x'"
  'S:[rows.A1]\n"model.heads" = "x"\n'
  docs/experiments.md "table3.toml:18:24: rows.x.data.dev_source: undefined variable 'nope' (define it in [vars] or the environment; [vars] has: shared, ...)"
  'S:[vars]\nshared = "a"\nwmt = "b"\n[rows.x]\n"data.dev_source" = "${nope}"\n'
  docs/experiments.md "grid.toml:6:50: grids.g.axes[0].model.d_k: 3 values, but 'model.heads' has 2 (keys of one axis are tied: ...)"
  'S:[grids.g]\naxes = [ { "model.heads" = [1, 2], "model.d_k" = [8, 16, 32] } ]\n'
  docs/plugins.md "attention plugin 'additive' does not support position rotation (positional plugin 'rope' uses them) on cpu (it supports on cpu: f32, f64; head sizes any; padding mask, causal, incremental, attention dropout; positions: score terms, value terms)"
  '[data.synthetic]\n[model.attention]\nname = "additive"\n[model.positional]\nname = "rope"\n'
)
for ((i = 0; i < ${#cases[@]}; i += 3)); do
  file=${cases[i + 2]}
  # shellcheck disable=SC2059  # the case's file is the format
  { [[ $file == S:* ]] && printf '[suite]\nname = "t"\nbase = "base.toml"\n'; printf "${file#S:}"; } >case.toml
  check_says "${cases[i]}" "${cases[i + 1]}" case.toml
done

# A row flash cannot serve on CUDA (the check needs no GPU): refused, and with a fallback, noted.
printf '[experiment]\ndevice = "cuda:0"\n[data.synthetic]\n[model]\nd_model = 512\n[model.attention]\nname = "flash"\n' >f.toml
printf '[suite]\nname = "t"\nbase = "f.toml"\n[rows.A1]\n"model.heads" = 1\n"model.d_k" = 512\n"model.d_v" = 512\n' >s.toml
check_says docs/plugins.md 'attnlab check: error: suite.toml:23:1: row A1: suite.toml:20:1: model.attention: attention plugin '\''flash'\'' does not support head size d_k = 512, head size d_v = 512 on cuda (it supports on cuda: f32, bf16; head sizes 16, 32, 64, 128; padding mask, causal, incremental, attention dropout, score expressions; positions: rotation, score terms, value terms (kernel form)); set fallback = "scaled_dot" (or another attention plugin) in [model.attention] to run such models with it (or set unsupported = "fallback" or "skip" in the grid or [suite])' s.toml
printf 'fallback = "scaled_dot"\n' >>f.toml
"$attnlab" check s.toml >noted.txt 2>&1 || true
said docs/experiments.md 'note: row A1: suite.toml:20:1: model.attention: attention plugin '\''flash'\'' does not support head size d_k = 512, head size d_v = 512 on cuda (it supports on cuda: f32, bf16; head sizes 16, 32, 64, 128; padding mask, causal, incremental, attention dropout, score expressions; positions: rotation, score terms, value terms (kernel form)): using its fallback '\''scaled_dot'\''' noted.txt

# docs/score-expressions.md
cat >e.toml <<'TOML'
[data.synthetic]
[model.attention]
name = "flash"
score_mod = "20 * tanh(score / 20) + bias[h, clamp(kvidx - q_idx, -8, 8) + 8]"
[model.attention.tensors.bias]
shape = ["heads", 17]
TOML
check_says docs/score-expressions.md "exp.toml:31:33: model.attention.score_mod: unknown name 'kvidx' (names: score, b, h, q_idx, kv_idx, q_len, kv_len, bias, inf; functions: abs, ...); did you mean 'kv_idx'?" e.toml
said docs/score-expressions.md "  20 * tanh(score / 20) + bias[h, clamp(kvidx - q_idx, -8, 8) + 8]" said.txt

echo "doc errors: $checked samples, each what the program says"
