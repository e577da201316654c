#!/usr/bin/env python3
"""Attention-core throughput of torch.nn.functional.scaled_dot_product_attention, with the shapes,
FLOP convention and output lines of bench_attention (bench/bench_attention.cpp), so that
bench/attention_compare.sh can put both in one table.

q, k, v [B, h, T, d] with B = tokens / T and h = 1024 / d; forward FLOPs 4 B h T^2 d (halved
when causal), backward 2.5 times the forward. Forward runs under torch.no_grad(); forward+backward
calls backward() with a fixed random gradient. PyTorch picks its SDPA backend (flash, cuDNN or
memory-efficient) itself; the header line names the version.

usage: pytorch_sdpa.py [--device cuda:0] [--dims 64,128] [--min-len 32] [--max-len 4096]
                       [--tokens 16384] [--warmup 3] [--iters 10] [--dtype bf16|f16|f32]
"""
import argparse
import time

import torch
import torch.nn.functional as F


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--dims", default="64,128")
    ap.add_argument("--min-len", type=int, default=32)
    ap.add_argument("--max-len", type=int, default=4096)
    ap.add_argument("--tokens", type=int, default=16384)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "f16", "f32"])
    args = ap.parse_args()
    device = torch.device(args.device)
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[args.dtype]

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    def time_ms(fn):
        for _ in range(args.warmup):
            fn()
        sync()
        t0 = time.perf_counter()
        for _ in range(args.iters):
            fn()
        sync()
        return (time.perf_counter() - t0) * 1e3 / args.iters

    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(f"# torch {torch.__version__} on {name}: FLOPs 4 B h T^2 d forward (halved when causal), "
          f"backward 2.5x forward; B = {args.tokens} / T, h = 1024 / d", flush=True)
    gen = torch.Generator(device="cpu").manual_seed(1)
    for d in [int(x) for x in args.dims.split(",")]:
        h = 1024 // d
        t = args.min_len
        while t <= args.max_len:
            b = max(1, args.tokens // t)

            def rand():
                x = torch.rand(b, h, t, d, generator=gen) * 2 - 1
                return x.to(device=device, dtype=dtype)

            q, k, v = (rand().requires_grad_() for _ in range(3))
            grad = rand()
            for causal in (False, True):
                fwd_flops = 4.0 * b * h * t * t * d * (0.5 if causal else 1.0)

                def forward():
                    with torch.no_grad():
                        F.scaled_dot_product_attention(q, k, v, is_causal=causal)

                def forward_backward():
                    out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                    out.backward(grad)
                    q.grad = k.grad = v.grad = None

                for pass_name, fn, flops in (("fwd", forward, fwd_flops),
                                             ("fwd+bwd", forward_backward, 3.5 * fwd_flops)):
                    ms = time_ms(fn)
                    print(f"impl=torch_sdpa device={args.device} dtype={args.dtype} d={d} T={t} "
                          f"causal={int(causal)} pass={pass_name} B={b} h={h} ms={ms:.4f} "
                          f"tflops={flops / (ms * 1e9):.4f}", flush=True)
            t *= 2


if __name__ == "__main__":
    main()
