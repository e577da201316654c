#!/usr/bin/env python3
"""Target tokens, seconds and tokens/s of a run's training, from its metrics.jsonl (every "train"
window's rate times its length). Used by the shell benchmarks: prints `tokens seconds rate`.

usage: bench/training_rate.py RUN_DIR/metrics.jsonl
"""
import json
import sys

tokens = seconds = 0.0
with open(sys.argv[1]) as f:
    for line in f:
        e = json.loads(line)
        if e.get("kind") == "train":
            tokens += e["tokens_per_second"] * e["window_seconds"]
            seconds += e["window_seconds"]
print(f"{tokens:.0f} {seconds:.3f} {tokens / seconds:.0f}")
