# Sourced by the program-level test scripts: strict mode, the attnlab program from $1, and a
# scratch folder (the working folder from here on) removed when the script exits.
set -euo pipefail
attnlab=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
