#!/usr/bin/env python3
"""Load an attnlab checkpoint (a safetensors file) into a dict of torch tensors.

Needs only json, struct and torch (no safetensors package). Usage:
    python3 tools/load_checkpoint.py run/checkpoints/step-00000100.safetensors
Format: docs/checkpoint-format.md.
"""
import json
import struct
import sys

import torch

DTYPES = {"F32": torch.float32, "F64": torch.float64, "BF16": torch.bfloat16,
          "I32": torch.int32, "I64": torch.int64, "U8": torch.uint8}


def load_checkpoint(path, with_optimizer=False):
    """Returns (tensors, metadata): model weights by parameter name (plus "optim.m.*" /
    "optim.v.*" Adam moments if with_optimizer) and the "__metadata__" strings."""
    assert sys.byteorder == "little", "safetensors data is little-endian"
    with open(path, "rb") as f:
        (header_len,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(header_len))
        data = bytearray(f.read())
    metadata = header.pop("__metadata__", {})
    tensors = {}
    for name, info in header.items():
        if name.startswith("optim.") and not with_optimizer:
            continue
        begin, end = info["data_offsets"]
        dtype = DTYPES[info["dtype"]]
        if begin == end:  # empty tensor: frombuffer refuses a zero-length buffer
            tensors[name] = torch.empty(info["shape"], dtype=dtype)
        else:
            tensors[name] = torch.frombuffer(data[begin:end], dtype=dtype).reshape(info["shape"])
    return tensors, metadata


if __name__ == "__main__":
    weights, meta = load_checkpoint(sys.argv[1])
    print(f"step {meta.get('attnlab.step')}, attnlab {meta.get('attnlab.version')}")
    for name, tensor in weights.items():
        print(f"{name}: {tuple(tensor.shape)} {tensor.dtype}")
