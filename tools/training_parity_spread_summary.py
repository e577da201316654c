#!/usr/bin/python3
"""Summary of tools/training_parity_spread.sh: reads WORK/CASE/{attnlab.BUILD.KERNEL,
pytorch.KERNEL.SEED}.jsonl (SEED 0: the start as given; others: perturbed by one rounding) and
prints, per case and window of steps, the largest relative difference of a step's losses between
the curves of each kind of pair, and the bound the test applies there."""
import itertools
import json
import os
import sys

WINDOWS = [(1, 10), (11, 17), (18, 25), (26, 32), (33, 40)]


def losses(path):
    """{step: loss} of a metrics.jsonl's training lines (or a losses.jsonl); a torn last line is left out."""
    with open(path) as f:
        lines = [json.loads(line) for line in f if line.rstrip().endswith("}")]
    return {j["step"]: j["loss"] for j in lines if j.get("kind", "train") == "train" and "loss" in j}


def worst(a, b, first, last):
    steps = [s for s in range(first, last + 1) if s in a and s in b]
    return max((abs(a[s] - b[s]) / abs(b[s]) for s in steps), default=0.0)


def bound(tolerance_args, step):
    pairs = []
    for arg in tolerance_args:
        rel, _, start = arg.partition("@")
        pairs.append((int(start or 1), float(rel)))
    return max((p for p in pairs if p[0] <= step), default=(1, float("inf")))[1]


def main():
    work, cases = sys.argv[1], sys.argv[2:]
    for case in cases:
        d = os.path.join(work, case)
        curves = {f[:-6]: losses(os.path.join(d, f)) for f in sorted(os.listdir(d)) if f.endswith(".jsonl")}
        attnlab = {k: v for k, v in curves.items() if k.startswith("attnlab.")}
        torch0 = {k.split(".")[1]: v for k, v in curves.items() if k.startswith("pytorch.") and k.endswith(".0")}
        perturbed = [(k.split(".")[1], v) for k, v in curves.items()
                     if k.startswith("pytorch.") and not k.endswith(".0")]
        with open(os.path.join(d, "tolerance.txt")) as f:
            tolerance = [w for w in f.read().split()[1:] if w != "--tolerance"]
        pairs = {
            "attnlab vs PyTorch, same kernels (the test)":
                [(a, torch0[name.split(".")[2]]) for name, a in attnlab.items()],
            "attnlab vs attnlab, two kernels or builds": list(itertools.combinations(attnlab.values(), 2)),
            "PyTorch vs PyTorch, two kernels": list(itertools.combinations(torch0.values(), 2)),
            "PyTorch from a start moved by one rounding vs PyTorch": [(p, torch0[k]) for k, p in perturbed],
        }
        print(f"\n## {case}: {len(attnlab)} attnlab curves, {len(torch0)} PyTorch curves, "
              f"{len(perturbed)} perturbed\n")
        print("| pair | " + " | ".join(f"steps {a}-{b}" for a, b in WINDOWS) + " |")
        print("| --- |" + " ---: |" * len(WINDOWS))
        for label, ps in pairs.items():
            cells = [f"{max((worst(x, y, a, b) for x, y in ps), default=0.0):.2g}" for a, b in WINDOWS]
            print(f"| {label} ({len(ps)}) | " + " | ".join(cells) + " |")
        print("| the test's bound | " + " | ".join(f"{bound(tolerance, b):g}" for a, b in WINDOWS) + " |")


if __name__ == "__main__":
    main()
