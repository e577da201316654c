# Sourced by the program-level test scripts: strict mode, the attnlab program from $1, and a
# scratch folder (the working folder from here on) removed when the script exits; tiny_experiment
# (tiny_experiment.sh) writes the experiment they train.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/tiny_experiment.sh"
attnlab=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
