#!/usr/bin/python3
"""Train in PyTorch exactly what `attnlab train` trains, to compare the two trainings.

`attnlab data batches EXPERIMENT.toml --steps N --out DIR` writes the first N steps' batches in the
trainer's order, the model's initial weights and the recipe (sizes, dropout, label smoothing,
learning-rate schedule, optimizer, clipping). This script trains the PyTorch Transformer of
bench/pytorch_train_step.py from those weights on those batches with the same schedule (written
out here from its definition), torch.optim.Adam or torch.optim.AdamW (decaying the parameters the
recipe names), torch.nn.utils.clip_grad_norm_ and the label-smoothed loss (sum over target tokens
/ tokens of the step), and writes

    OUT/losses.jsonl             {"step": k, "loss": ...} for every step
    OUT/weights.safetensors      the trained weights under attnlab's parameter names

With --like CHECKPOINT (any checkpoint of an attnlab run of the same experiment) it also writes
OUT/run/checkpoints/step-<N>.safetensors, a valid attnlab checkpoint (that checkpoint's metadata,
these weights, no optimizer state, the checksum recomputed; needs python3-xxhash) and
OUT/run/vocab.model, so that attnlab's own beam search translates with the PyTorch-trained model:

    attnlab eval OUT/run/checkpoints/step-00001200.safetensors --test

With --compare RUN/metrics.jsonl (an attnlab run of the same experiment with log_every = 1) it
prints both loss curves side by side and their largest difference. With dropout 0 in the
experiment, both trainings start from the same weights and see the same batches, so their curves
agree to float rounding for many steps; with dropout the masks differ and only the trends compare.

    python3 tools/pytorch_reference_train.py DIR --out OUT [--threads 2] [--like CKPT]
        [--compare METRICS [--tolerance REL[@STEP]]...] [--perturb REL [--perturb-seed S]]

--perturb REL scales every initial weight by (1 + REL * u), u uniform in [-1, 1] per weight: with
REL near float's rounding (1e-7), the curves of several seeds show how far rounding alone carries
this trajectory in N steps (tools/training_parity_spread.sh).
"""
import argparse
import json
import math
import os
import struct
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from load_checkpoint import load_checkpoint  # noqa: E402
from pytorch_train_step import Transformer, transformer_lr  # noqa: E402

TORCH_DTYPE_NAMES = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64", torch.int32: "I32"}


def learning_rate(r, step):
    """The recipe's schedule at optimizer step `step` (1-based), written out from its definition
    (docs/experiments.md): linear warm-up to the peak, then the schedule's decay."""
    kind, w = r.get("schedule", "inverse_sqrt"), r["warmup_steps"]
    if kind == "inverse_sqrt" and r.get("lr", 0) <= 0:
        return transformer_lr(step, r["d_model"], w) * r["lr_scale"]
    peak = r["lr"] if r.get("lr", 0) > 0 else r["lr_scale"] * (r["d_model"] * w) ** -0.5
    if kind == "inverse_sqrt":
        return peak * min(step / w, (w / step) ** 0.5)
    if step <= w:
        return peak * step / w
    if kind == "constant":
        return peak
    done = min((step - w) / max(r["max_steps"] - w, 1), 1.0)
    fall = 0.5 * (1 + math.cos(math.pi * done)) if kind == "cosine" else 1 - done
    return r["min_lr"] + (peak - r["min_lr"]) * fall


def make_optimizer(model, r, beta1, beta2, eps):
    """torch.optim.Adam, or torch.optim.AdamW with the recipe's decay on the parameters it names."""
    if r.get("optimizer", "adam") == "adam":
        return torch.optim.Adam(model.parameters(), lr=1.0, betas=(beta1, beta2), eps=eps)
    decayed = set(r["weight_decay_parameters"])
    named = list(model.named_parameters())
    unknown = decayed - {attnlab_name(n) for n, _ in named}
    if unknown:
        sys.exit(f"pytorch_reference_train: the recipe decays parameters the model lacks: {sorted(unknown)}")
    groups = [{"params": [p for n, p in named if attnlab_name(n) in decayed], "weight_decay": r["weight_decay"]},
              {"params": [p for n, p in named if attnlab_name(n) not in decayed], "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=1.0, betas=(beta1, beta2), eps=eps)


def torch_name(attnlab_name):
    """attnlab 'encoder.layers.0.ffn.w1.weight' -> the reference module's 'encoder.0.ffn.w1.weight';
    a pre-norm stack's final norm 'encoder.norm.weight' -> 'encoder_norm.weight'."""
    for side in ("encoder", "decoder"):
        prefix = side + ".layers."
        if attnlab_name.startswith(prefix):
            return side + "." + attnlab_name[len(prefix):]
        if attnlab_name.startswith(side + ".norm."):
            return side + "_norm." + attnlab_name[len(side + ".norm."):]
    return attnlab_name


def attnlab_name(torch_name_):
    for side in ("encoder", "decoder"):
        if torch_name_.startswith(side + ".") and torch_name_[len(side) + 1].isdigit():
            return side + ".layers." + torch_name_[len(side) + 1:]
        if torch_name_.startswith(side + "_norm."):
            return side + ".norm." + torch_name_[len(side + "_norm."):]
    return torch_name_


def check_recipe(r):
    """The reference model covers the paper's model with the default plugins, either norm plugin and
    every norm placement."""
    problems = []
    if r["plugins"][:4] != ["scaled_dot", "sinusoidal", "relu", "standard"] or \
            r["plugins"][4] not in ("layer_norm", "rms_norm"):
        problems.append(f"plugins {r['plugins']} (the reference has scaled_dot, sinusoidal, relu, standard, "
                        "layer_norm or rms_norm)")
    if r.get("norm_position", "post") not in ("post", "pre", "deepnorm"):
        problems.append(f"norm_position {r['norm_position']} (the reference has post, pre and deepnorm)")
    if r["d_k"] * r["heads"] != r["d_model"] or r["d_v"] != r["d_k"]:
        problems.append(f"d_k {r['d_k']}, d_v {r['d_v']} with {r['heads']} heads of d_model {r['d_model']}")
    if r["attention_dropout"] or r["ffn_dropout"] or r["embedding_dropout"] != r["dropout"]:
        problems.append("attention, FFN or a separate embedding dropout")
    if abs(r["layer_norm_eps"] - 1e-6) > 1e-12:
        problems.append(f"layer_norm_eps {r['layer_norm_eps']}")
    if r.get("rdrop", 0):
        problems.append(f"rdrop {r['rdrop']} (the reference trains one pass per batch)")
    if problems:
        sys.exit("pytorch_reference_train: the reference model cannot train this recipe: " + "; ".join(problems))


def write_safetensors(path, tensors, metadata):
    """tensors: list of (name, tensor). Returns the data section's bytes (for the checksum)."""
    header, chunks, offset = {}, [], 0
    for name, t in tensors:
        data = t.detach().contiguous().cpu().numpy().tobytes()
        header[name] = {"dtype": TORCH_DTYPE_NAMES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    text += b" " * ((8 - (8 + len(text)) % 8) % 8)  # the data section starts 8-byte aligned
    data = b"".join(chunks)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        f.write(data)
    os.replace(tmp, path)
    return data


def write_attnlab_checkpoint(out_dir, weights, like, steps, vocab):
    import xxhash  # python3-xxhash

    _, meta = load_checkpoint(like)
    meta = dict(meta)
    meta["attnlab.step"] = str(steps)
    meta["attnlab.optimizer"] = json.dumps({"kind": "adam", "step": steps, "has_moments": False})
    run = os.path.join(out_dir, "run")
    os.makedirs(os.path.join(run, "checkpoints"), exist_ok=True)
    path = os.path.join(run, "checkpoints", f"step-{steps:08d}.safetensors")
    # The checksum covers the data section only: compute it, then write the header that names it.
    data = b"".join(t.detach().contiguous().numpy().tobytes() for _, t in weights)
    meta["attnlab.checksum"] = "xxh3-64:" + xxhash.xxh3_64(data).hexdigest()
    write_safetensors(path, weights, meta)
    with open(vocab, "rb") as src, open(os.path.join(run, "vocab.model"), "wb") as dst:
        dst.write(src.read())
    return path


def compare(losses, metrics_path, tolerances=()):
    theirs = {}
    with open(metrics_path) as f:
        for line in f:
            try:
                j = json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn last line
            if j.get("kind") == "train":
                theirs[j["step"]] = j["loss"]
    steps = [s for s in range(1, len(losses) + 1) if s in theirs]
    if not steps:
        sys.exit(f"{metrics_path}: no per-step training losses to compare (train with log_every = 1)")
    print(f"{'step':>6} {'attnlab':>10} {'pytorch':>10} {'rel. diff':>10}")
    marks = sorted({1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, steps[-1]} & set(steps))
    for s in marks:
        a, p = theirs[s], losses[s - 1]
        print(f"{s:>6} {a:>10.5f} {p:>10.5f} {abs(a - p) / abs(p):>10.2e}")
    for first, last in ((1, 10), (1, 100), (1, len(losses))):
        window = [s for s in steps if first <= s <= last]
        if window:
            worst = max(abs(theirs[s] - losses[s - 1]) / abs(losses[s - 1]) for s in window)
            mean_a = sum(theirs[s] for s in window) / len(window)
            mean_p = sum(losses[s - 1] for s in window) / len(window)
            print(f"steps {first}-{window[-1]}: largest relative difference {worst:.2e}; "
                  f"mean loss attnlab {mean_a:.4f}, pytorch {mean_p:.4f}")
    if tolerances:
        bounds = [(s, bound_at(tolerances, s)) for s in steps]
        over = [(s, abs(theirs[s] - losses[s - 1]) / abs(losses[s - 1]), b) for s, b in bounds]
        worst = max(over, key=lambda x: x[1] / x[2])
        if worst[1] > worst[2]:
            sys.exit(f"FAIL: the loss curves differ by {worst[1]:.2e} (relative) at step {worst[0]}, "
                     f"above {worst[2]:g}")
        print(f"PASS: {len(steps)} steps agree within {describe_bounds(tolerances)} (relative; largest "
              f"{max(x[1] for x in over):.2e}, at step {max(over, key=lambda x: x[1])[0]})")


def parse_tolerance(text):
    """REL or REL@STEP: the largest relative difference of a step's losses, from step 1 or from STEP on."""
    rel, _, step = text.partition("@")
    try:
        rel, step = float(rel), int(step or 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expects REL or REL@STEP (1e-4, 5e-3@18), got '{text}'")
    if not rel > 0 or step < 1:
        raise argparse.ArgumentTypeError(f"expects a positive REL and a STEP from 1, got '{text}'")
    return step, rel


def bound_at(tolerances, step):
    return max((t for t in tolerances if t[0] <= step), default=(1, math.inf))[1]


def describe_bounds(tolerances):
    return ", ".join(f"{rel:g}" if step == 1 else f"{rel:g} from step {step}" for step, rel in sorted(tolerances))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", help="the folder written by attnlab data batches")
    ap.add_argument("--out", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1, help="PyTorch's dropout masks")
    ap.add_argument("--perturb", type=float, default=0.0,
                    help="scale each initial weight by (1 + REL * u), u uniform in [-1, 1]: how far a float-level "
                    "change of the start moves the curve (the trajectory's own sensitivity)")
    ap.add_argument("--perturb-seed", type=int, default=1, help="the generator of --perturb's u")
    ap.add_argument("--like", help="an attnlab checkpoint of the same experiment: also write an attnlab checkpoint")
    ap.add_argument("--compare", help="metrics.jsonl of the attnlab run (log_every = 1)")
    ap.add_argument("--tolerance", type=parse_tolerance, action="append", default=[],
                    help="with --compare: fail when a step's losses differ by more than REL (relative); REL@STEP "
                    "applies from STEP on (repeatable: 1e-4 --tolerance 5e-3@18)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    with open(os.path.join(a.dir, "recipe.json")) as f:
        r = json.load(f)
    check_recipe(r)
    batches, _ = load_checkpoint(os.path.join(a.dir, "batches.safetensors"))
    init, _ = load_checkpoint(os.path.join(a.dir, "init.safetensors"))

    model = Transformer(r["vocab_size"], r["encoder_layers"], r["decoder_layers"], r["d_model"], r["heads"],
                        r["d_ff"], p=r["dropout"], max_length=r["max_length"], norm=r["plugins"][4],
                        position=r.get("norm_position", "post"))
    own = dict(model.named_parameters())
    state = {}
    for name, t in init.items():
        if torch_name(name) not in own:
            sys.exit(f"pytorch_reference_train: the reference model has no parameter for {name}")
        state[torch_name(name)] = t.clone()
        if a.perturb > 0 and t.is_floating_point():
            g = torch.Generator().manual_seed(a.perturb_seed * 1000003 + len(state))
            u = torch.rand(t.shape, generator=g, dtype=torch.float64) * 2 - 1
            state[torch_name(name)] = (t.double() * (1 + a.perturb * u)).to(t.dtype)
    missing = set(own) - set(state)
    if missing:
        sys.exit(f"pytorch_reference_train: {a.dir}/init.safetensors lacks {sorted(missing)}")
    model.load_state_dict(state, strict=False)
    model.train()
    beta1, beta2, eps = r["adam"]
    opt = make_optimizer(model, r, beta1, beta2, eps)
    pad, acc, steps = r["pad_id"], r["accumulate"], r["steps"]
    os.makedirs(a.out, exist_ok=True)
    losses = []
    start = time.time()
    with open(os.path.join(a.out, "losses.jsonl"), "w") as log:
        for step in range(1, steps + 1):
            group = [(step - 1) * acc + i for i in range(acc)]
            tokens = sum(int((batches[f"tgt_out.{k}"] != pad).sum()) for k in group)
            total = 0.0
            for k in group:
                logits = model(batches[f"src.{k}"], batches[f"tgt_in.{k}"])
                loss_sum = F.cross_entropy(logits.reshape(-1, r["vocab_size"]), batches[f"tgt_out.{k}"].reshape(-1),
                                           ignore_index=pad, label_smoothing=r["label_smoothing"], reduction="sum")
                (loss_sum / tokens).backward()
                total += loss_sum.item()
            for g in opt.param_groups:
                g["lr"] = learning_rate(r, step)
            if r.get("clip_norm", 0) > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), r["clip_norm"])
            opt.step()
            opt.zero_grad(set_to_none=True)
            losses.append(total / tokens)
            log.write(json.dumps({"step": step, "loss": losses[-1]}) + "\n")
            if step % 100 == 0 or step == steps:
                print(f"step {step}/{steps} | loss {losses[-1]:.4f} | {time.time() - start:.0f} s", flush=True)
    weights = [(attnlab_name(n), p.detach().clone()) for n, p in model.named_parameters()]
    write_safetensors(os.path.join(a.out, "weights.safetensors"), weights, {"format": "pt"})
    if a.like:
        order = [n for n in init]  # attnlab's parameter order
        by_name = dict(weights)
        path = write_attnlab_checkpoint(a.out, [(n, by_name[n]) for n in order], a.like, steps,
                                        os.path.join(a.dir, "vocab.model"))
        print(f"attnlab checkpoint: {path}")
    if a.compare:
        compare(losses, a.compare, a.tolerance)


if __name__ == "__main__":
    main()
