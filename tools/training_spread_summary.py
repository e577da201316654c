#!/usr/bin/env python3
"""Summarises tools/training_spread.sh's lines ("<kernel> | <test message>", on stdin): for each
figure that a test of training outcomes bounds, its range per kernel and over all of them, as a
Markdown table (count of values in parentheses)."""
import collections
import re
import sys

# figure -> pattern of the test message that carries it (first group: the value).
FIGURES = {
    "copy task: last-20 mean loss, one seed (bound 0.25)": r"^copy task seed \d+: last 20 of 400 steps: mean loss ([\d.e+-]+)",
    "copy task: the same, mean of five seeds (bound 0.12)": r"^copy task seeds .*: mean of the last 20 steps' mean loss ([\d.e+-]+)",
    "copy task: last-20 token accuracy, one seed (bound 0.95)": r"^copy task seed \d+: .*token accuracy ([\d.e+-]+)",
    "copy task: loss of step 400 alone, one seed (not bounded)": r"^copy task seed \d+: .*loss at step 400 ([\d.e+-]+)",
    "synthetic corpus: dev perplexity after 500 steps, one seed (bound 1.6)": r"^learning regression seed \d+: dev ppl ([\d.e+-]+)",
    "synthetic corpus: the same, mean of three seeds (bound 1.38)": r"^learning regression seeds .*: mean dev ppl ([\d.e+-]+)",
    "synthetic corpus: test BLEU after 500 steps, one seed (bound 55)": r"^learning regression seed \d+: .*test BLEU ([\d.e+-]+)",
    "synthetic corpus: the same, mean of three seeds (bound 68)": r"^learning regression seeds .*mean test BLEU ([\d.e+-]+)",
}
# check_loss_curve_follows reports the share of its allowance after the message of the test that
# called it: these name the tests.
CURVES = {
    r"^copy task, mean of seeds .*: first 10 steps": "bf16 learns as fp32: share of the allowance taken (bound 1)",
    r"^copy task, mean of seeds .*, last 10 steps: fp32 .* bf16 \(oneDNN\)": "host bf16 follows fp32: share of the allowance taken (bound 1)",
}
ALLOWANCE = r"^loss curve follows its reference: the closest window takes ([\d.e+-]+) of its allowance"

values = collections.defaultdict(lambda: collections.defaultdict(list))
kernels = []
last_test = None
for line in sys.stdin:
    if " | " not in line or line.startswith("#"):
        continue
    kernel, message = line.rstrip("\n").split(" | ", 1)
    if kernel not in kernels:
        kernels.append(kernel)
    for name, pattern in FIGURES.items():
        m = re.search(pattern, message)
        if m:
            values[name][kernel].append(float(m.group(1)))
    for pattern, name in CURVES.items():
        if re.search(pattern, message):
            last_test = name
    m = re.search(ALLOWANCE, message)
    if m and last_test:
        values[last_test][kernel].append(float(m.group(1)))

names = list(FIGURES) + list(CURVES.values())
print("| figure | " + " | ".join(kernels) + " | all |")
print("| --- |" + " ---: |" * (len(kernels) + 1))
for name in names:
    cells, every = [], []
    for k in kernels:
        v = values[name][k]
        every += v
        cells.append(f"{min(v):.3g} .. {max(v):.3g} ({len(v)})" if v else "-")
    total = f"{min(every):.3g} .. {max(every):.3g} ({len(every)})" if every else "-"
    print(f"| {name} | " + " | ".join(cells) + f" | {total} |")
