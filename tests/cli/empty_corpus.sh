#!/usr/bin/env bash
# An empty training corpus, a corpus the length filter empties and an empty dev set each end with
# a message that says what is empty and where (not SentencePiece's internal assertion text).
# usage: empty_corpus.sh ATTNLAB_PROGRAM
source "$(dirname "$0")/scratch.sh"

experiment() {  # experiment TRAIN_PREFIX DEV_PREFIX [MAX_LENGTH]
  cat <<TOML
[experiment]
name = "empty"
[data]
train_source = "$1.src"
train_target = "$1.tgt"
dev_source = "$2.src"
dev_target = "$2.tgt"
cache_dir = "cache"
max_length = ${3:-64}
[vocab]
size = 40
[model]
encoder_layers = 1
decoder_layers = 1
d_model = 16
heads = 2
d_ff = 32
[training]
batch_tokens = 200
max_steps = 2
TOML
}
expect_error() {  # expect_error TEXT: attnlab train exp.toml fails and says TEXT
  set +e
  runs=$((${runs:-0} + 1))
  "$attnlab" train exp.toml --run-dir run$runs >out.log 2>&1
  local rc=$?
  set -e
  [[ $rc -ne 0 ]] || { echo "attnlab train succeeded; expected: $1"; cat out.log; exit 1; }
  grep -qF -- "$1" out.log || { echo "expected '$1' in:"; cat out.log; exit 1; }
  if grep -qi "sentencepiece\|assert\|check failed" out.log; then echo "internal text in:"; cat out.log; exit 1; fi
}

for i in $(seq 1 60); do echo "the small cat number $i sat on the mat"; done >text.src
for i in $(seq 1 60); do echo "die kleine katze nummer $i sass auf der matte"; done >text.tgt
: >empty.src
: >empty.tgt
printf '\n\n  \n' >blank.src
printf '\n\n  \n' >blank.tgt

experiment empty text >exp.toml
expect_error "empty.src' is empty (0 lines, none with text)"
experiment blank text >exp.toml
expect_error "blank.src' is empty (3 lines, none with text)"
experiment text text 3 >exp.toml
expect_error "text.tgt' was left out by the length filter (data.max_length = 3"
experiment text empty >exp.toml
expect_error "empty corpus: '$PWD/empty.src' and '$PWD/empty.tgt' have no lines"
echo "empty corpora are named"
