#!/usr/bin/env bash
# Runs `attnlab check SUITE` and asserts its exit status; prints the output for the test's regex.
# usage: check_suite.sh ATTNLAB SUITE.toml EXPECTED_STATUS
set -u
attnlab=$1 suite=$2 expected=$3
"$attnlab" check "$suite" 2>&1
status=$?
if [[ $status -ne $expected ]]; then
  echo "check exited with status $status, expected $expected"
  exit 1
fi
echo "check exited with status $status as expected"
