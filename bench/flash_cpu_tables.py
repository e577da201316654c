#!/usr/bin/env python3
"""The tables of bench/flash_cpu_compare.sh from its log: medians over the repetitions, ratios."""
import re
import statistics
import sys
from collections import defaultdict

times = defaultdict(list)  # (impl, T, causal, pass) -> [ms]
gflops = defaultdict(list)
sgemm = []
for line in open(sys.argv[1]):
    if line.startswith("sgemm_") and len(line.split()) > 1:
        sgemm.append(float(line.split()[1]))
    m = re.match(r"impl=(\S+) .*T=(\d+) causal=(\d) pass=(\S+) .*ms=([\d.]+) tflops=([\d.]+)", line)
    if m:
        key = (m[1], int(m[2]), int(m[3]), m[4])
        times[key].append(float(m[5]))
        gflops[key].append(1000 * float(m[6]))


def ms(impl, t, causal, p):
    v = times.get((impl, t, causal, p))
    return statistics.median(v) if v else None


def table(title, rows, columns):
    print(f"\n### {title}\n")
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for r in rows:
        print("| " + " | ".join(r) + " |")


fmt = lambda x: "-" if x is None else f"{x:.1f}"
ratio = lambda a, b: "-" if a is None or b is None else f"{a / b:.2f}"

rows = []
for p in ("fwd", "fwd+bwd"):
    full, win = ms("flash_full", 2048, 1, p), ms("flash+expr:window", 2048, 1, p)
    rows.append([p, fmt(full), fmt(win), ratio(full, win)])
table("Tiles skipped: T 2048, causal, window 128 with a sink (ms; goal >= 3.5x)",
      rows, ["pass", "flash, full causal", "flash + window", "speed-up"])

rows = []
for t in (256, 512, 1024):
    for c in (0, 1):
        for p in ("fwd", "fwd+bwd"):
            a, b = ms("flash+expr:alibi", t, c, p), ms("flash+alibi", t, c, p)
            s, n = ms("flash+expr:score", t, c, p), ms("flash", t, c, p)
            rows.append([str(t), str(c), p, fmt(b), fmt(a), ratio(a, b), fmt(n), fmt(s), ratio(s, n)])
table("An expression's cost against flash's built-in path (ms; goal <= 1.15x)", rows,
      ["T", "causal", "pass", "built-in ALiBi", "ALiBi expression", "ratio", "plain", "`score` expression", "ratio"])

rows = []
for t in (256, 512, 1024):
    for c in (0, 1):
        for p in ("fwd", "fwd+bwd"):
            fa, sa = ms("flash+expr:alibi", t, c, p), ms("scaled_dot+alibi", t, c, p)
            fs, ss = ms("flash+expr:softcap", t, c, p), ms("scaled_dot+expr:softcap", t, c, p)
            rows.append([str(t), str(c), p, fmt(sa), fmt(fa), ratio(sa, fa), fmt(ss), fmt(fs), ratio(ss, fs)])
table("flash with an expression against scaled_dot with the variant as dense terms (ms; speed-up goal >= 1)",
      rows, ["T", "causal", "pass", "scaled_dot + alibi", "flash + ALiBi expression", "speed-up",
             "scaled_dot + softcap", "flash + softcap", "speed-up"])

best = max(sgemm) if sgemm else None
rows = []
for impl in ("flash", "flash+expr:score", "flash+expr:alibi", "flash+expr:softcap"):
    for p in ("fwd", "fwd+bwd"):
        v = gflops.get((impl, 1024, 0, p))
        g = statistics.median(v) if v else None
        rows.append([impl, p, fmt(g), "-" if g is None or not best else f"{g / best:.2f}"])
table(f"GFLOP/s at T 1024 (not causal) against the best GEMM, cblas_sgemm {', '.join(f'{s:.1f}' for s in sgemm)} "
      "GFLOP/s before and after (goal >= 0.4)", rows, ["impl", "pass", "GFLOP/s", "of the best GEMM"])
