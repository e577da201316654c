#!/usr/bin/env bash
# The slowest tests of a CTest run, from its cost data (each test's average time over its runs):
#   bash scripts/slowest-tests.sh [COST_FILE | BUILD_DIR] [N]
# Default: build/'s last run, 25 tests. tests/costs/plain.txt and sanitize.txt are the snapshots
# CI starts from on a new machine (tests/costs/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
source=${1:-build}
count=${2:-25}
[[ -d $source ]] && source=$source/Testing/Temporary/CTestCostData.txt
[[ -s $source ]] || { echo "slowest-tests: no cost data at $source (run ctest first)" >&2; exit 2; }
# Lines "NAME RUNS SECONDS" (a name may hold spaces) until the "---" before the failed tests.
awk '$0 == "---" {exit} $(NF - 1) != "0" {print $NF "\t" $0}' "$source" | sort -t $'\t' -k1,1 -g -r |
  awk -F '\t' -v count="$count" '{total += $1; n++}
    n <= count {name = $2; sub(/ [0-9]+ [0-9.e+-]+$/, "", name); printf "%8.1f s  %s\n", $1, name}
    END {printf "%8.1f s  in all, %d tests (seconds of one core)\n", total, n}'
