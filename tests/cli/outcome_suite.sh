# The suite of the row-outcome tests (suite_outcomes.sh, slurm_outcomes.sh), sourced after
# scratch.sh: four rows over corpus files, of which `bad` fails (its target file is one line
# short) and `taken` is the row the tests let another process take. taken comes last: with --jobs
# 2 the run starts it only once base or late has trained, long after the tests have stopped the run.
#   outcome_corpus                 writes corpus/ (the synthetic corpus, and short.tgt)
#   outcome_suite NAME >FILE.toml  the suite
outcome_corpus() {
  "$attnlab" data synth --out corpus --train 1500 --dev 40 --test 40 >/dev/null
  head -n 1499 corpus/train.tgt >corpus/short.tgt
}

outcome_suite() {
  cat <<TOML
[suite]
name = "$1"
[base.experiment]
threads = 1
[base.data]
train_source = "corpus/train.src"
train_target = "corpus/train.tgt"
dev_source = "corpus/dev.src"
dev_target = "corpus/dev.tgt"
cache_dir = "cache"
TOML
  tiny_suite_model
  cat <<'TOML'
[base.training]
batch_tokens = 500
max_steps = 60
warmup_steps = 10
eval_every = 60
checkpoint_every = 10
checkpoint_every_seconds = 0
[base.eval]
beam = 1
[rows.bad]
"data.train_target" = "corpus/short.tgt"
[rows.late]
"model.heads" = 2
[rows.taken]
"model.d_ff" = 48
TOML
}
