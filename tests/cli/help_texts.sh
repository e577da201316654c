#!/usr/bin/env bash
# Every command's --help (each listed by `attnlab --help` and `attnlab data --help`) ends with an
# example and its exit statuses; its example parses (run in an empty folder it fails, if at all,
# with status 1, never 2, a bad command line); options show their defaults (those named here, and
# no empty list's "=[]"); a misspelt command, option or choice gets a "did you mean".
# usage: help_texts.sh ATTNLAB_PROGRAM
source "$(dirname "$0")/scratch.sh"
fail() { echo "FAIL: $1"; shift; for f in "$@"; do echo "--- $f"; cat "$f"; done; exit 1; }

# The subcommands listed in a help text: the first word of each line of its Subcommands section.
subcommands() { sed -n '/^Subcommands:/,/^$/p' | sed -n 's/^  \([a-z][a-z]*\) .*/\1/p'; }
commands=()
for c in $("$attnlab" --help | subcommands); do
  if [[ $c == data ]]; then
    for d in $("$attnlab" data --help | subcommands); do commands+=("data $d"); done
  elif [[ $c != version ]]; then
    commands+=("$c")
  fi
done
((${#commands[@]} >= 14)) || fail "only ${#commands[@]} commands listed: ${commands[*]}"
for c in "${commands[@]}"; do
  read -r -a words <<<"$c"
  help="help-${c// /-}.txt"
  "$attnlab" "${words[@]}" --help >"$help" 2>&1 || fail "attnlab $c --help exited $?" "$help"
  grep -q "^Example:$" "$help" || fail "attnlab $c --help has no example" "$help"
  grep -q "^Exit status: 0 " "$help" || fail "attnlab $c --help gives no exit statuses" "$help"
  ! grep -q "=\[\]" "$help" || fail "attnlab $c --help shows an empty list as a default" "$help"
  example=$(sed -n '/^Example:$/{n;p;}' "$help" | sed 's/^ *//; s/ *[<>|].*//')
  [[ $example == "attnlab $c"* ]] || fail "attnlab $c's example does not call it: $example" "$help"
  read -r -a call <<<"${example#attnlab }"
  mkdir -p "try-${c// /-}" && pushd "try-${c// /-}" >/dev/null
  set +e
  "$attnlab" "${call[@]}" </dev/null >out.txt 2>&1
  status=$?
  set -e
  popd >/dev/null
  [[ $status -eq 0 || $status -eq 1 ]] || fail "attnlab $c's example exited $status: $example" "try-${c// /-}/out.txt"
done
"$attnlab" translate --help | grep -q -- "--beam N:1..1000 .*default: the run's eval.beam, 4 unless set" ||
  fail "translate --beam hides its default"
"$attnlab" translate --help | grep -q -- "--alpha .*0.6 unless set" || fail "translate --alpha hides its default"
"$attnlab" average --help | grep -q -- "--last N:>=1=5 " || fail "average --last hides its default"
"$attnlab" bleu --help | grep -q -- "--tokenize TEXT:[a-z0-9|-]*=13a" || fail "bleu --tokenize hides its default"
# A misspelt command, option or choice gets a suggestion (and the bad command line's status 2).
suggests() {
  local want=$1
  shift
  set +e
  "$attnlab" "$@" >said.txt 2>&1
  local status=$?
  set -e
  ((status == 2)) || fail "attnlab $* exited $status, not 2" said.txt
  grep -qF "did you mean '$want'?" said.txt || fail "attnlab $* suggests no '$want'" said.txt
}
suggests train trian x.toml
suggests --steps train --stpes 5 x.toml
suggests --format report --formt md runs/x
suggests md report --format mdd runs/x
suggests bash completion bsh
suggests markdown check --format markdwn x.toml
"$attnlab" check --format jsn x.toml >said.txt 2>&1 || true
! grep -q "did you mean" said.txt || fail "check --format jsn suggests a name three letters from it" said.txt
echo "help: ${#commands[@]} commands, each with an example that parses, exit statuses and defaults"
