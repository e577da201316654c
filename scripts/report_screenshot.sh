#!/usr/bin/env bash
# Renders the HTML report of a suite run folder to a PNG with headless Chromium (Debian package
# `chromium`, not installed by scripts/setup.sh: it is large).
# usage: scripts/report_screenshot.sh RUN_DIR OUT.png [ATTNLAB_PROGRAM]
#   ATTNLAB_PROGRAM defaults to $ATTNLAB, then build/bin/attnlab next to this script's repository.
#   CHROMIUM overrides the browser program (default: chromium).
set -euo pipefail
if [[ $# -lt 2 ]]; then
  echo "usage: $0 RUN_DIR OUT.png [ATTNLAB_PROGRAM]" >&2
  exit 2
fi
run_dir=$1
out=$2
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
attnlab=${3:-${ATTNLAB:-$root/build/bin/attnlab}}
chromium=${CHROMIUM:-chromium}
command -v "$chromium" >/dev/null || { echo "error: '$chromium' not found (apt-get install chromium)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$attnlab" report "$run_dir" --format html --output "$work/report.html"
out_abs=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
rm -f "$out_abs"
# A fresh profile, no network, no GPU; the page has no external resources anyway.
"$chromium" --headless --no-sandbox --disable-gpu --disable-background-networking \
  --disable-component-update --disable-sync --no-first-run --hide-scrollbars \
  --user-data-dir="$work/profile" --screenshot="$out_abs" --window-size=1400,1800 \
  "file://$work/report.html" >"$work/chromium.log" 2>&1 || { cat "$work/chromium.log" >&2; exit 1; }
[[ -s $out_abs ]] || { cat "$work/chromium.log" >&2; echo "error: no screenshot written" >&2; exit 1; }
echo "wrote $out_abs"
