#!/usr/bin/env bash
# attnlab report on a fake suite run folder (5 rows: a base and a clearly better row with 2 seeds
# each, a row equal to the base, a failed and a pending row): the text formats through the
# program, then the HTML page rendered by headless Chromium and the PNG checked (decoded with
# python3's zlib: it must show the table and coloured curves, not a blank page).
# usage: report_screenshot.sh ATTNLAB_PROGRAM SOURCE_DIR [KEEP_PNG]
#   --text-only as SOURCE_DIR's successor skips the browser (the check CTest runs without chromium).
set -euo pipefail
attnlab=$1
src=$2
keep=${3:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run=$work/runs/table3-mini

python3 - "$run" <<'PY'
import json, math, os, sys
run = sys.argv[1]
os.makedirs(run, exist_ok=True)
nouns = ["cat", "dog", "house", "river", "teacher", "car", "garden", "city"]
verbs = ["sees", "likes", "finds", "paints", "builds", "watches"]
refs = [f"the {nouns[i % 8]} {verbs[i % 6]} the old {nouns[(i * 3 + 1) % 8]} near the {nouns[(i * 5 + 2) % 8]} today"
        for i in range(60)]
base = ["a" + r[3:r.rfind(" near")] for r in refs]
with open(os.path.join(run, "dev.ref"), "w") as f:
    f.write("".join(r + "\n" for r in refs))
sig = "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0"
paper = {"base": {"ppl": 4.92, "bleu": 25.8, "params_m": 65}, "A1": {"ppl": 5.29, "bleu": 24.9, "params_m": None},
         "B1": {"ppl": 5.16, "bleu": 25.1, "params_m": 58}}
rows = []
def add(name, seed, settings, status, ppl=None, bleu=None, hyps=None, final=5.0):
    d = f"{name}-s{seed}-0123456789abcdef"
    os.makedirs(os.path.join(run, d), exist_ok=True)
    rows.append({"name": name, "seed": seed, "hash": "0123456789abcdef", "dir": d, "settings": settings,
                 "paper": paper.get(name), "status": status,
                 "error": "out of memory at step 12" if status == "failed" else ""})
    with open(os.path.join(run, d, "config.toml"), "w") as f:
        f.write(f'[data]\ndev_target = "{os.path.join(run, "dev.ref")}"\n')
    if status != "done":
        return
    json.dump({"row": name, "seed": seed, "steps": 2000, "parameters": 65000000, "train_seconds": 3725.0,
               "tokens_per_second": 12345.0, "dev_ppl": ppl, "dev_ppl_smoothed": ppl * 1.5, "bleu": bleu,
               "bleu_signature": sig, "bleu_mode": "sacrebleu", "beam": 4, "alpha": 0.6},
              open(os.path.join(run, d, "result.json"), "w"), indent=2)
    with open(os.path.join(run, d, "metrics.jsonl"), "w") as f:
        for step in range(50, 2001, 50):
            loss = 2.0 + final / 3 + 8.0 * math.exp(-step / (300 + 40 * seed))
            f.write(json.dumps({"kind": "train", "step": step, "loss": loss, "lr": 1e-3,
                                "tokens_per_second": 12000, "elapsed": step * 0.5}) + "\n")
            if step % 250 == 0:
                f.write(json.dumps({"kind": "dev", "step": step, "dev_ppl": final + 300 * math.exp(-step / 250),
                                    "dev_nll": 1, "dev_smoothed_loss": 1}) + "\n")
    with open(os.path.join(run, d, "dev.hyp"), "w") as f:
        f.write("".join(h + "\n" for h in hyps))
add("base", 1, [], "done", 4.9, 25.0, base, 4.9)
add("base", 2, [], "done", 5.1, 26.0, base, 5.1)
add("A1", 1, [["model.heads", "1"], ["model.d_k", "512"]], "done", 5.2, 30.0, refs, 5.8)
add("A1", 2, [["model.heads", "1"], ["model.d_k", "512"]], "done", 5.4, 30.0, refs, 6.0)
add("A2", 1, [["model.heads", "4"]], "done", 5.0, 25.5, base, 7.0)
add("B1", 1, [["model.d_k", "16"]], "failed")
add("C1", 1, [["model.encoder_layers", "2"], ["model.decoder_layers", "2"]], "pending")
json.dump({"name": "table3-mini", "source": "experiments/table3-mini.toml",
           "reference": "Vaswani et al. 2017, Table 3", "rows": rows},
          open(os.path.join(run, "suite.json"), "w"), indent=2)
PY

# The text formats through the program.
"$attnlab" report "$run" | tee "$work/report.txt"
grep -q '5.00 ± 0.14' "$work/report.txt"
grep -q 'B1 (seed 1) failed: out of memory at step 12' "$work/report.txt"
grep -q 'dev PPL: direction agrees on 1 of 1 rows (1 significant)' "$work/report.txt"
grep -q 'BLEU: direction agrees on 0 of 1 rows (0 significant); against the paper beyond the noise: A1' "$work/report.txt"
"$attnlab" report "$run" --format csv --output "$work/report.csv"
grep -q '^A1,done,2,2,' "$work/report.csv"
# Each format to a file first: grep -q on a pipe may close it early and fail the writer (pipefail).
"$attnlab" report "$run" --format markdown --output "$work/report.md"
grep -q '^| row | settings |' "$work/report.md"
"$attnlab" report "$run" --format latex --output "$work/report.tex"
grep -q 'toprule' "$work/report.tex"
if "$attnlab" report "$work/nowhere" 2>"$work/err.txt"; then echo "a missing run folder was accepted" >&2; exit 1; fi
grep -q 'suite.json' "$work/err.txt"

"$attnlab" report "$run" --format html --output "$work/report.html"
[[ $(grep -c '<polyline class="curve"' "$work/report.html") == 10 ]]
grep -q '<p class="agreement"><strong>dev PPL: direction agrees on 1 of 1 rows' "$work/report.html"
if [[ $keep == --text-only ]]; then
  echo "report text formats check passed"
  exit 0
fi

# The HTML page in a browser.
png=$work/report.png
bash "$src/scripts/report_screenshot.sh" "$run" "$png" "$attnlab"
python3 - "$png" <<'PY'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, width = 8, b"", 0
while pos < len(data):
    length, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + length]
    if kind == b"IHDR":
        width, height, depth, color = struct.unpack(">IIBB", body[:10])
        assert depth == 8 and color in (2, 6), f"unsupported PNG (depth {depth}, colour type {color})"
        bpp = 3 if color == 2 else 4
    elif kind == b"IDAT":
        idat += body
    pos += 12 + length
raw = zlib.decompress(idat)
stride = width * bpp
prev = bytearray(stride)
non_white = coloured = 0
for y in range(height):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, bpp):
        r, g, b = line[x], line[x + 1], line[x + 2]
        if min(r, g, b) < 235: non_white += 1
        if max(r, g, b) - min(r, g, b) > 80: coloured += 1
    prev = line
total = width * height
print(f"screenshot {width}x{height}: {non_white} non-white pixels ({100 * non_white / total:.2f}%), {coloured} coloured")
assert width == 1400 and height == 1800, "unexpected size"
assert non_white > total * 0.01, "the page looks blank"
assert coloured > 2000, "no coloured curves visible"
PY
size=$(stat -c %s "$png")
[[ $size -gt 20000 ]] || { echo "screenshot too small ($size bytes)" >&2; exit 1; }
[[ -z $keep ]] || cp "$png" "$keep"
echo "report screenshot check passed ($size bytes)"
