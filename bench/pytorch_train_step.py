#!/usr/bin/python3
"""PyTorch reference for bench_train_step: the same Transformer, batches and training step in
PyTorch eager mode on the CPU or a CUDA device, printing the same line format (with the same
model FLOP count and MFU). See bench/README.md.

Model (as attnlab::nmt::Transformer with scaled_dot / sinusoidal / relu / standard dropout):
post-norm encoder and decoder layers LayerNorm(x + Dropout(Sublayer(x))), eps 1e-6 (the
reference training of tools/pytorch_reference_train.py also builds pre-norm, DeepNorm and RMSNorm
blocks: Transformer(norm=..., position=...)); multi-head
attention with biases in the Q, K, V and output projections (no dropout on the weights); ReLU
feed-forward network; sinusoidal positions added to the embeddings scaled by sqrt(d_model), then
dropout; one embedding matrix for source, target and output projection; dropout 0.1 on residual
branches and embedding sums. Loss: label-smoothed (0.1) cross-entropy summed over non-pad targets,
divided by their count. Adam(0.9, 0.98, 1e-9) with the paper's schedule (LambdaLR, warmup 4000).

Precision: fp32 (TF32 off), tf32 (torch.backends.cuda.matmul.allow_tf32), bf16 (torch.autocast
with bfloat16 around forward and loss; fp32 master weights and Adam state, as attnlab's bf16).

    python3 bench/pytorch_train_step.py [--model small|multi30k|base] [--device cpu|cuda:N]
        [--precision fp32|tf32|bf16] [--batch-tokens N | --batch B] [--len T] [--threads N]
        [--warmup W] [--steps S] [--peak-tflops P] [--compile [--compile-mode MODE]]

--compile runs the model through torch.compile (impl=pytorch-compile in the result line);
--compile-mode reduce-overhead also replays the compiled forward and backward as CUDA graphs
(impl=pytorch-compile-reduce-overhead).
"""
import argparse
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

PAD = 0

CONFIGS = {
    # vocab, encoder layers, decoder layers, d_model, heads, d_ff
    "small": dict(vocab=8000, enc=4, dec=4, d=128, h=4, ff=256),
    "multi30k": dict(vocab=8000, enc=6, dec=6, d=128, h=8, ff=512),  # table3-multi30k.toml's base row
    "base": dict(vocab=37000, enc=6, dec=6, d=512, h=8, ff=2048),
}


class MultiHeadAttention(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h, self.dk = h, d // h
        self.w_q, self.w_k, self.w_v, self.w_o = (nn.Linear(d, d) for _ in range(4))

    def split(self, x):  # [B, T, d] -> [B, h, T, dk]
        return x.view(x.size(0), x.size(1), self.h, self.dk).transpose(1, 2)

    def forward(self, q, kv, mask):  # mask: additive, broadcastable to [B, h, Tq, Tk]
        b, tq, _ = q.shape
        q, k, v = self.split(self.w_q(q)), self.split(self.w_k(kv)), self.split(self.w_v(kv))
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.dk) + mask
        context = torch.matmul(torch.softmax(scores, dim=-1), v)
        return self.w_o(context.transpose(1, 2).reshape(b, tq, self.h * self.dk))


class FeedForward(nn.Module):
    def __init__(self, d, ff):
        super().__init__()
        self.w1, self.w2 = nn.Linear(d, ff), nn.Linear(ff, d)

    def forward(self, x):
        return self.w2(F.relu(self.w1(x)))


class RMSNorm(nn.Module):
    """x / sqrt(mean(x^2) + eps) * weight (Zhang & Sennrich 2019; no bias), as attnlab's rms_norm."""

    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def make_norm(kind, d):
    return RMSNorm(d) if kind == "rms_norm" else nn.LayerNorm(d, eps=1e-6)


def deepnorm_alphas(enc, dec):
    """DeepNorm's residual scales (Wang et al. 2022) for the encoder and the decoder layers."""
    if enc == 0:
        return 1.0, (2.0 * dec) ** 0.25
    return 0.81 * (enc ** 4 * dec) ** (1.0 / 16.0), (3.0 * dec) ** 0.25


class Block(nn.Module):
    """A residual block's form: post-norm Norm(alpha x + Dropout(f(x))) or pre-norm x + Dropout(f(Norm(x)))."""

    def __init__(self, p, pre, alpha):
        super().__init__()
        self.drop, self.pre, self.alpha = nn.Dropout(p), pre, alpha

    def forward(self, norm, x, f):
        if self.pre:
            return x + self.drop(f(norm(x)))
        return norm((self.alpha * x if self.alpha != 1.0 else x) + self.drop(f(x)))


class EncoderLayer(nn.Module):
    def __init__(self, d, h, ff, p, norm="layer_norm", pre=False, alpha=1.0):
        super().__init__()
        self.self_attn, self.ffn = MultiHeadAttention(d, h), FeedForward(d, ff)
        self.norm1, self.norm2 = make_norm(norm, d), make_norm(norm, d)
        self.block = Block(p, pre, alpha)

    def forward(self, x, src_mask):
        x = self.block(self.norm1, x, lambda z: self.self_attn(z, z, src_mask))
        return self.block(self.norm2, x, self.ffn)


class DecoderLayer(nn.Module):
    def __init__(self, d, h, ff, p, norm="layer_norm", pre=False, alpha=1.0):
        super().__init__()
        self.self_attn, self.cross_attn = MultiHeadAttention(d, h), MultiHeadAttention(d, h)
        self.ffn = FeedForward(d, ff)
        self.norm1, self.norm2, self.norm3 = (make_norm(norm, d) for _ in range(3))
        self.block = Block(p, pre, alpha)

    def forward(self, y, memory, causal_mask, src_mask):
        y = self.block(self.norm1, y, lambda z: self.self_attn(z, z, causal_mask))
        y = self.block(self.norm2, y, lambda z: self.cross_attn(z, memory, src_mask))
        return self.block(self.norm3, y, self.ffn)


def sinusoid(length, d):
    pos = torch.arange(length, dtype=torch.float32).unsqueeze(1)
    div = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(10000.0) / d))
    pe = torch.zeros(length, d)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * div), torch.cos(pos * div)
    return pe


class Transformer(nn.Module):
    """position: "post" (the paper), "pre" (with a final norm per stack: encoder_norm, decoder_norm)
    or "deepnorm" (post-norm with the residual scaled; its initial scaling comes with the weights)."""

    def __init__(self, vocab, enc, dec, d, h, ff, p=0.1, max_length=1024, norm="layer_norm", position="post"):
        super().__init__()
        self.d = d
        self.embedding = nn.Parameter(torch.randn(vocab, d) / math.sqrt(d))
        self.register_buffer("pe", sinusoid(max_length, d))
        self.drop = nn.Dropout(p)
        pre = position == "pre"
        enc_alpha, dec_alpha = deepnorm_alphas(enc, dec) if position == "deepnorm" else (1.0, 1.0)
        self.encoder = nn.ModuleList(EncoderLayer(d, h, ff, p, norm, pre, enc_alpha) for _ in range(enc))
        self.decoder = nn.ModuleList(DecoderLayer(d, h, ff, p, norm, pre, dec_alpha) for _ in range(dec))
        self.encoder_norm = make_norm(norm, d) if pre and enc > 0 else None
        self.decoder_norm = make_norm(norm, d) if pre else None

    def embed(self, ids):
        x = F.embedding(ids, self.embedding) * math.sqrt(self.d)
        return self.drop(x + self.pe[: ids.size(1)])

    def forward(self, src, tgt_in):
        dev = src.device
        src_mask = torch.zeros(src.shape, device=dev).masked_fill(src == PAD, float("-inf"))[:, None, None, :]
        t = tgt_in.size(1)
        causal = torch.full((t, t), float("-inf"), device=dev).triu(1)
        x = self.embed(src)
        for layer in self.encoder:
            x = layer(x, src_mask)
        if self.encoder_norm is not None:
            x = self.encoder_norm(x)
        y = self.embed(tgt_in)
        for layer in self.decoder:
            y = layer(y, x, causal, src_mask)
        if self.decoder_norm is not None:
            y = self.decoder_norm(y)
        return torch.matmul(y, self.embedding.t())  # logits through the shared embedding


def random_batch(b, t, vocab, gen, device):
    """Row r holds t - r % 4 tokens then padding, in source and target (as bench_train_step)."""
    lengths = t - torch.arange(b) % 4
    keep = torch.arange(t)[None, :] < lengths[:, None]
    ids = [(torch.randint(3, vocab, (b, t), generator=gen) * keep).to(device) for _ in range(3)]
    return ids[0], ids[1], ids[2], int(keep.sum()), [int(n) for n in lengths]


def model_flops(model, c, lengths):
    """Model FLOPs of one training step over real tokens, as bench_train_step counts them
    (bench/README.md): 6 x non-embedding parameters x tokens (encoder parameters and the
    decoder's cross-attention key/value projections see the source tokens, the other decoder
    parameters the target tokens), 6 x d x V x target tokens for the output projection through
    the shared embedding, and 6 x h x (d_k + d_v) x Tq x Tk per sentence and attention layer."""
    tokens = float(sum(lengths))  # source = target lengths here
    squares = float(sum(n * n for n in lengths))
    src_params = tgt_params = 0
    for name, p in model.named_parameters():
        if name == "embedding":
            continue
        if name.startswith("encoder.") or ".cross_attn.w_k." in name or ".cross_attn.w_v." in name:
            src_params += p.numel()
        else:
            tgt_params += p.numel()
    d, h = c["d"], c["h"]
    attention = 6.0 * h * (2 * (d // h)) * squares * (c["enc"] + 2 * c["dec"])
    return 6.0 * (src_params + tgt_params) * tokens + 6.0 * d * c["vocab"] * tokens + attention


H200_PEAK_TFLOPS = {"bf16": 989.0, "tf32": 494.0, "fp32": 67.0}


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def transformer_lr(step, d, warmup=4000):
    step = max(step, 1)
    return d ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=CONFIGS, default="small")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--precision", choices=["fp32", "tf32", "bf16"], default="fp32")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=-1)
    ap.add_argument("--steps", type=int, default=-1)
    ap.add_argument("--batch", type=int, default=-1)
    ap.add_argument("--len", type=int, default=32)
    ap.add_argument("--batch-tokens", type=int, default=0)
    ap.add_argument("--peak-tflops", type=float, default=0.0)
    ap.add_argument("--compile", action="store_true",
                    help="torch.compile the model; the warmup steps include the compilation")
    ap.add_argument("--compile-mode", choices=["default", "reduce-overhead", "max-autotune"], default="default",
                    help="torch.compile's mode (reduce-overhead: CUDA graphs)")
    a = ap.parse_args()
    if a.batch_tokens > 0 and a.batch > 0:
        ap.error("give --batch-tokens or --batch, not both")
    batch = max(1, (a.batch_tokens + a.len // 2) // a.len) if a.batch_tokens > 0 else (a.batch if a.batch > 0 else 128)
    device = torch.device(a.device)
    gpu = device.type == "cuda"
    small = a.model != "base"
    warmup = a.warmup if a.warmup >= 0 else (3 if small or gpu else 1)
    steps = a.steps if a.steps >= 0 else (10 if small or gpu else 2)
    torch.set_num_threads(a.threads)
    # fp32 is full fp32 on the GPU too (PyTorch's matmul default may allow TF32).
    torch.backends.cuda.matmul.allow_tf32 = a.precision == "tf32"
    torch.backends.cudnn.allow_tf32 = a.precision == "tf32"
    torch.manual_seed(1)
    c = CONFIGS[a.model]
    model = Transformer(c["vocab"], c["enc"], c["dec"], c["d"], c["h"], c["ff"]).to(device)
    model.train()
    params = sum(p.numel() for p in model.parameters())
    # The batches all have one shape, so the compiled graph is built once, in the warmup steps.
    forward = torch.compile(model, mode=a.compile_mode) if a.compile else model
    opt = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    # LambdaLR calls the lambda with the number of scheduler.step() calls so far (0 at first):
    # the k-th optimizer step uses transformer_lr(k), as attnlab.
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: transformer_lr(s + 1, c["d"]))
    gen = torch.Generator().manual_seed(100)
    batches = [random_batch(batch, a.len, c["vocab"], gen, device) for _ in range(4)]
    autocast = a.precision == "bf16"

    fwd = bwd = upd = flops = 0.0
    tokens, loss_value = 0, 0.0
    for step in range(1, warmup + steps + 1):
        src, tgt_in, tgt_out, ntok, lengths = batches[step % len(batches)]
        sync(device)
        t0 = time.perf_counter()
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=autocast):
            logits = forward(src, tgt_in).reshape(-1, c["vocab"])
            loss_sum = F.cross_entropy(logits.float(), tgt_out.reshape(-1), ignore_index=PAD, label_smoothing=0.1,
                                       reduction="sum")
        objective = loss_sum / ntok
        sync(device)
        t1 = time.perf_counter()
        objective.backward()
        sync(device)
        t2 = time.perf_counter()
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        sync(device)
        t3 = time.perf_counter()
        loss_value = loss_sum.item() / ntok
        if step > warmup:
            fwd, bwd, upd, tokens = fwd + t1 - t0, bwd + t2 - t1, upd + t3 - t2, tokens + ntok
            flops += model_flops(model, c, lengths)
    total = fwd + bwd + upd
    achieved = flops / total / 1e12
    peak = a.peak_tflops if a.peak_tflops > 0 else (H200_PEAK_TFLOPS[a.precision] if gpu else 0.0)
    mfu = f"{achieved / peak:.3f}" if peak > 0 else "n/a"
    peak_mem = torch.cuda.max_memory_reserved(device) / 2**30 if gpu else 0.0
    dev_name = f"cuda:{device.index or 0}" if gpu else "cpu"
    impl = "pytorch"
    if a.compile:
        impl = "pytorch-compile" + ("" if a.compile_mode == "default" else "-" + a.compile_mode)
    print(f"impl={impl} model={a.model} device={dev_name} precision={a.precision} threads={a.threads} "
          f"batch={batch}x{a.len} params={params} steps={steps} ms_per_step={1000 * total / steps:.1f} "
          f"tgt_tok_per_s={tokens / total:.0f} fwd_ms={1000 * fwd / steps:.1f} bwd_ms={1000 * bwd / steps:.1f} "
          f"opt_ms={1000 * upd / steps:.1f} model_tflop_per_step={flops / steps / 1e12:.3f} tflops={achieved:.1f} "
          f"peak_tflops={f'{peak:.0f}' if peak > 0 else 'n/a'} mfu={mfu} peak_mem_gib={peak_mem:.2f} "
          f"loss={loss_value:.4f}")


if __name__ == "__main__":
    main()
