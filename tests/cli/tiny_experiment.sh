# The tiny experiment the CLI tests train, defined once: a synthetic corpus, a 1 + 1-layer model
# of d_model 32, a few dozen steps. Sourced by scratch.sh. Usage:
#   tiny_experiment NAME [section.key=VALUE ...] >exp.toml
# A setting replaces the default of the same key or adds a key (tables included: eval.beam=2,
# model.attention.name='"flash"'); VALUE is written as TOML, so strings keep their quotes.
tiny_experiment() {
  local name=$1
  shift
  local -a settings=(
    "experiment.name=\"$name\""
    'data.cache_dir="cache"'
    data.synthetic.train_pairs=1000 data.synthetic.dev_pairs=20 data.synthetic.test_pairs=20
    vocab.size=150
    model.encoder_layers=1 model.decoder_layers=1 model.d_model=32 model.heads=4 model.d_ff=64
    training.batch_tokens=500 training.max_steps=30 training.warmup_steps=10 training.eval_every=30
    training.checkpoint_every=10 training.checkpoint_every_seconds=0
  )
  local override i found
  for override in "$@"; do
    found=0
    for i in "${!settings[@]}"; do
      if [[ ${settings[i]%%=*} == "${override%%=*}" ]]; then
        settings[i]=$override
        found=1
      fi
    done
    ((found)) || settings+=("$override")
  done
  # One table per section, in the order the sections first appear.
  local -a sections=()
  local setting path section
  for setting in "${settings[@]}"; do
    path=${setting%%=*}
    section=${path%.*}
    [[ " ${sections[*]} " == *" $section "* ]] || sections+=("$section")
  done
  for section in "${sections[@]}"; do
    echo "[$section]"
    for setting in "${settings[@]}"; do
      path=${setting%%=*}
      if [[ ${path%.*} == "$section" ]]; then echo "${path##*.} = ${setting#*=}"; fi
    done
  done
}

# The [base.*] tables of the tiny suites the CLI tests run: the same corpus and model size, the
# training and rows left to each test. Usage: { ...; tiny_suite_base; ...; } >suite.toml
tiny_suite_base() {
  cat <<'TOML'
[base.data.synthetic]
train_pairs = 1500
dev_pairs = 40
test_pairs = 40
TOML
  tiny_suite_model
}

# The vocabulary and model tables of tiny_suite_base alone, for suites over corpus files.
tiny_suite_model() {
  cat <<'TOML'
[base]
vocab = { size = 200 }
model = { encoder_layers = 1, decoder_layers = 1, d_model = 32, heads = 4, d_ff = 64 }
TOML
}

# Each logged training step of a run folder as "STEP LOSS" (metrics.jsonl, written by rank 0
# alone): two runs trained alike print the same lines. Usage: train_losses RUN_DIR
train_losses() {
  grep '"kind":"train"' "$1/metrics.jsonl" | sed 's/.*"loss":\([^,]*\),.*"step":\([0-9]*\).*/\2 \1/'
}

# Each dev evaluation of a run folder as "STEP PERPLEXITY" (per wordpiece, without label
# smoothing). Usage: dev_perplexities RUN_DIR
dev_perplexities() {
  grep '"kind":"dev"' "$1/metrics.jsonl" | sed 's/.*"dev_ppl":\([^,]*\),.*"step":\([0-9]*\).*/\2 \1/'
}
