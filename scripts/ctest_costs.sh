# Sourced by scripts/test.sh and scripts/sanitize.sh: CTest's cost data (each test's time in the
# last run, <build>/Testing/Temporary/CTestCostData.txt), with which `ctest -j` starts the slowest
# tests first, kept per machine for each kind of run (plain, sanitize) beyond the build folder, so
# that the next run in any clone, fresh or not, orders its tests as well:
#   ctest_costs_restore BUILD KIND  the machine's record of KIND, else the snapshot in tests/costs/,
#                                   into BUILD where it has none (CTest reads it for the tests
#                                   whose names have no spaces; tests/costs/apply_costs.cmake gives
#                                   the others their cost from the same record)
#   ctest_costs_save BUILD KIND     after a full run: its costs become the machine's record
ctest_costs_record() { echo "${XDG_CACHE_HOME:-$HOME/.cache}/attnlab/ctest-costs/$1.txt"; }

ctest_costs_restore() {
  local file=$1/Testing/Temporary/CTestCostData.txt record
  record=$(ctest_costs_record "$2")
  [[ -s $file ]] && return 0
  [[ -s $record ]] || record=tests/costs/$2.txt
  [[ -s $record ]] || return 0
  mkdir -p "$(dirname "$file")" && cp "$record" "$file"
}

ctest_costs_save() {
  local file=$1/Testing/Temporary/CTestCostData.txt record
  record=$(ctest_costs_record "$2")
  [[ -s $file ]] || return 0
  # Without the entries of no run that CTest writes for the first words of the names it could not
  # read (e.g. "core/no-grad 0 0" for "core/no-grad ...").
  mkdir -p "$(dirname "$record")" && awk '$0 == "---" || $(NF - 1) != "0"' "$file" >"$record.tmp" &&
    mv "$record.tmp" "$record" || true
}
