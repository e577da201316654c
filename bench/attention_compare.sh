#!/usr/bin/env bash
# Attention-core TFLOP/s of the attnlab attention plugins (bench_attention) and of PyTorch's
# scaled_dot_product_attention (pytorch_sdpa.py) on one device, back to back in the same job, as
# one Markdown table: rows (d, causal, pass, T), a column per implementation, and the ratio of each
# plugin to PyTorch. On the CPU only bench_attention runs (the PyTorch script is for CUDA).
#
#   bash bench/attention_compare.sh                       # cuda:0, scaled_dot, flash, cudnn, torch
#   DEVICE=cpu bash bench/attention_compare.sh            # the CPU part (smaller lengths)
#   BUILD=build DEVICE=cuda:0 PLUGINS=cudnn PYTHON=python3 ARGS="--max-len 1024" bash bench/attention_compare.sh
#   SM90=1 bash bench/attention_compare.sh                # also flash with its Hopper forward, as flash_sm90
#
# SM90=1 runs bench_attention once more for flash with ATTNLAB_FLASH_SM90=1 (its sm_90a forward,
# docs/plugins.md) and names that column flash_sm90, so that one table holds both of flash's
# kernels and PyTorch's.
# ARGS are passed to both programs (--dims, --min-len, --max-len, --tokens, --warmup, --iters).
# The raw lines are kept in $LOG (default: a temporary file, named at the end).
# Works from a build tree (BUILD, default <repo>/build) and from the folder scripts/pack-gpu.sh
# makes (its run.sh sets the library path for attnlab's programs only).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [[ -x $here/../run.sh ]]; then
  bench=("$here/../run.sh" bench_attention)
else
  BUILD=${BUILD:-$here/../build}
  bench=("$BUILD/bin/bench_attention")
  [[ -x ${bench[0]} ]] || { echo "no ${bench[0]}: build it first (cmake --build $BUILD)" >&2; exit 1; }
fi
DEVICE=${DEVICE:-cuda:0}
PYTHON=${PYTHON:-python3}
PLUGINS=${PLUGINS:-scaled_dot,flash,cudnn}
ARGS=${ARGS:-}
LOG=${LOG:-$(mktemp /tmp/attention_compare.XXXXXX)}

# shellcheck disable=SC2086  # ARGS is a list of options
"${bench[@]}" --device "$DEVICE" --plugins "$PLUGINS" $ARGS | tee "$LOG"
if [[ ${SM90:-0} == 1 ]]; then
  # shellcheck disable=SC2086
  ATTNLAB_FLASH_SM90=1 "${bench[@]}" --device "$DEVICE" --plugins flash $ARGS | sed 's/^impl=flash /impl=flash_sm90 /' |
    tee -a "$LOG"
fi
if [[ $DEVICE == cuda* ]]; then
  # shellcheck disable=SC2086
  "$PYTHON" "$here/pytorch_sdpa.py" --device "$DEVICE" $ARGS | tee -a "$LOG" ||
    echo "# note: pytorch_sdpa.py failed (is PyTorch with CUDA installed for $PYTHON?)" | tee -a "$LOG"
fi

python3 - "$LOG" <<'EOF'
import sys
from collections import defaultdict

rows, impls, dtypes = defaultdict(dict), [], {}
for line in open(sys.argv[1]):
    if not line.startswith("impl="):
        continue
    f = dict(kv.split("=", 1) for kv in line.split())
    key = (int(f["d"]), int(f["causal"]), f["pass"], int(f["T"]))
    rows[key][f["impl"]] = float(f["tflops"])
    if f["impl"] not in impls:
        impls.append(f["impl"])
        dtypes[f["impl"]] = f["dtype"]
if not rows:
    sys.exit("no measurements")
ref = "torch_sdpa" if "torch_sdpa" in impls else None
# GFLOP/s when nothing reaches a TFLOP/s (the CPU), TFLOP/s otherwise.
giga = max(v for r in rows.values() for v in r.values()) < 1.0
unit, factor = ("GFLOP/s", 1000.0) if giga else ("TFLOP/s", 1.0)
head = ["d", "causal", "pass", "T"] + [f"{i} ({dtypes[i]})" for i in impls]
if ref:
    head += [f"{i} / torch" for i in impls if i != ref]
print()
print(f"{unit} of the attention core (4 B h T^2 d forward, halved when causal; backward 2.5x forward)")
print()
print("| " + " | ".join(head) + " |")
print("|" + "---|" * 4 + "---:|" * (len(head) - 4))
for key in sorted(rows, key=lambda k: (k[0], k[1], k[2] != "fwd", k[3])):
    r = rows[key]
    cells = [str(key[0]), "yes" if key[1] else "no", key[2], str(key[3])]
    cells += [f"{r[i] * factor:.3g}" if i in r else "-" for i in impls]
    if ref:
        cells += [f"{r[i] / r[ref]:.2f}" if i in r and r.get(ref) else "-" for i in impls if i != ref]
    print("| " + " | ".join(cells) + " |")
EOF
echo "raw lines: $LOG"
