#!/usr/bin/env bash
# One command's command line: `attnlab COMMAND --help` exits 0 and lists its options; a bad value
# is refused with exit status 2, before any work, naming the option and what it accepts.
# usage: command_line.sh ATTNLAB_PROGRAM SOURCE_DIR COMMAND
set -euo pipefail
attnlab=$1
src=$2
command=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

fail() { echo "FAIL: $*" >&2; exit 1; }

# --help: exit 0, the usage line and at least one option of the command.
read -r -a words <<<"$command"
help=$("$attnlab" "${words[@]}" --help) || fail "attnlab $command --help exited $?"
grep -q "^Usage: attnlab $command" <<<"$help" || fail "no usage line in: $help"

# The refused value: arguments, then the message expected (a fixed string).
suite=$src/experiments/table3-smoke.toml
case $command in
  plugins)      bad=(--check x.so --tolerance abc);        expect="--tolerance: expects a positive number (e.g. 5e-2), got 'abc'" ;;
  train)        bad=("$suite" --steps 0);                  expect="--steps: expects a whole number >= 1, got '0'" ;;
  "data synth") bad=(--out d --train many);                expect="--train: expects a whole number >= 1, got 'many'" ;;
  "data batches") bad=("$suite" --steps 2.5 --out d);      expect="--steps: expects a whole number >= 1, got '2.5'" ;;
  "data shapes") bad=("$suite" --multiple 0);              expect="--multiple: expects a whole number >= 1, got '0'" ;;
  translate)    bad=(--checkpoint r --beam abc);           expect="--beam: expects a whole number from 1 to 1000, got 'abc'" ;;
  score)        bad=(--checkpoint r --source a --target b --device gpu0); expect="--device: invalid device 'gpu0' (expected cpu, cuda or cuda:N)" ;;
  average)      bad=(r --last 0);                          expect="--last: expects a whole number >= 1, got '0'" ;;
  bleu)         bad=(--ref r --tokenize moses);            expect="--tokenize: unknown BLEU tokenizer 'moses' (valid: 13a, intl, char, none)" ;;
  eval)         bad=(r --alpha fast);                      expect="--alpha: expects a number >= 0, got 'fast'" ;;
  run)          bad=("$suite" --jobs 0);                   expect="--jobs: expects a whole number from 1 to 1024, got '0'" ;;
  status)       bad=();                                    expect="SUITE_OR_RUN_DIR is required" ;;
  check)        bad=("$suite" --format pdf);               expect="--format: unknown table format 'pdf' (valid: text, markdown, csv)" ;;
  report)       bad=(r --bootstrap-samples 0);             expect="--bootstrap-samples: expects a whole number from 1 to 1000000, got '0'" ;;
  *) fail "no case for command '$command'" ;;
esac
set +e
out=$("$attnlab" "${words[@]}" "${bad[@]}" 2>&1)
rc=$?
set -e
[[ $rc -eq 2 ]] || fail "attnlab $command ${bad[*]} exited $rc, expected 2: $out"
grep -qF -- "$expect" <<<"$out" || fail "attnlab $command ${bad[*]}: expected '$expect' in: $out"
grep -qF -- "attnlab $command --help" <<<"$out" || fail "the error does not point to --help: $out"
# Nothing was started or written.
[[ -z $(ls -A "$work") ]] || fail "attnlab $command ${bad[*]} wrote: $(ls -A "$work")"
echo "attnlab $command: --help exits 0; a bad value is refused: $expect"
