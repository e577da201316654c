#!/usr/bin/env bash
# attnlab completion bash: the generated script, sourced in bash, completes commands, subcommands
# and a command's options, and files after a command.
# usage: completion.sh ATTNLAB_PROGRAM
source "$(dirname "$0")/scratch.sh"
fail() { echo "FAIL: $1"; exit 1; }
"$attnlab" completion bash >attnlab.bash || fail "completion bash exited $?"
bash -n attnlab.bash || fail "the script is not valid bash"
touch exp.toml
complete_words() {  # complete_words WORD...: what completing the last word offers
  bash -c 'source ./attnlab.bash; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _attnlab; echo "${COMPREPLY[*]}"' _ "$@"
}
[[ $(complete_words attnlab tr) == "train translate" ]] || fail "attnlab tr: $(complete_words attnlab tr)"
[[ $(complete_words attnlab data s) == "synth shapes" ]] || fail "attnlab data s: $(complete_words attnlab data s)"
[[ $(complete_words attnlab train --s) == "--set --steps" ]] || fail "attnlab train --s: $(complete_words attnlab train --s)"
[[ $(complete_words attnlab check exp.toml --ro) == "--rows" ]] || fail "check --ro: $(complete_words attnlab check exp.toml --ro)"
[[ $(complete_words attnlab train ex) == "exp.toml" ]] || fail "attnlab train ex: $(complete_words attnlab train ex)"
bash -c 'source ./attnlab.bash; complete -p attnlab' | grep -q "_attnlab" || fail "the completion is not registered"
echo "completion: commands, subcommands, options and files"
