#!/usr/bin/env python3
"""Writes the binary seed inputs of fuzz/corpus/ (the text seeds are written by hand):
safetensors files as the format specifies them (docs/checkpoint-format.md), and parallel-text
inputs for the corpus_reader harness (source, a 0xFF byte, target; gzip and CRLF variants).
Run from anywhere: python3 fuzz/make_binary_seeds.py"""
import gzip
import json
import pathlib
import struct

corpus = pathlib.Path(__file__).resolve().parent / "corpus"


def safetensors(tensors, metadata=None):
    """tensors: (name, dtype, shape, raw bytes) in data-section order."""
    header, offset = {}, 0
    if metadata:
        header["__metadata__"] = metadata
    for name, dtype, shape, data in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(t[3] for t in tensors)


def write(harness, name, data):
    path = corpus / harness / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


write("safetensors", "f32-i64-metadata.safetensors", safetensors(
    [("encoder.weight", "F32", [2, 3], struct.pack("<6f", 0.5, -1.0, 2.0, 0.0, 3.25, -0.125)),
     ("step", "I64", [1], struct.pack("<q", 1200))],
    {"format": "attnlab", "step": "1200"}))
write("safetensors", "every-dtype.safetensors", safetensors(
    [("a", "F64", [2], struct.pack("<2d", 1.5, -2.5)),
     ("b", "BF16", [2, 2], struct.pack("<4H", 0x3F80, 0xBF80, 0x4000, 0x0000)),
     ("c", "I32", [3], struct.pack("<3i", 1, -2, 3)),
     ("d", "U8", [4], bytes([0, 1, 254, 255])),
     ("scalar", "F32", [], struct.pack("<f", 42.0)),
     ("empty", "F32", [0, 3], b"")]))
write("safetensors", "header-only.safetensors", safetensors([]))

src = "Two young men are playing football .\nA dog runs through the snow .\n\nÜber 3,5 Millionen Menschen !\n"
tgt = "Zwei junge Männer spielen Fußball .\nEin Hund rennt durch den Schnee .\n\n3.5 million people !\n"
write("corpus_reader", "pair.txt", src.encode() + b"\xff" + tgt.encode())
write("corpus_reader", "single-file.txt", "一只狗在雪地里奔跑。\nA cat — naïve café\n".encode())
write("corpus_reader", "bom-crlf-no-final-newline.txt",
      b"\xef\xbb\xbf" + src.replace("\n", "\r\n").rstrip("\r\n").encode() + b"\xff"
      + tgt.replace("\n", "\r\n").rstrip("\r\n").encode())
zipped = gzip.compress(src.encode(), mtime=0)
assert b"\xff" not in zipped, "the gzip stream must not hold the separator byte"
write("corpus_reader", "gzip-source.txt", zipped + b"\xff" + tgt.encode())
write("corpus_reader", "unequal-lines.txt", b"one\ntwo\n\xffeins\n")
