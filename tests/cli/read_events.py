"""Reads a run folder's TensorBoard event files back with Python's protobuf, independently of
attnlab: every record's framing and masked CRC-32C is checked, every Event parsed, and the scalars
compared with metrics.jsonl and the evaluation record.

usage: read_events.py PROTO_FILE RUN_DIR
"""
import glob
import json
import os
import struct
import subprocess
import sys
import tempfile


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def records(path):
    with open(path, "rb") as f:
        blob = f.read()
    at = 0
    while at < len(blob):
        (length,) = struct.unpack_from("<Q", blob, at)
        (length_crc,) = struct.unpack_from("<I", blob, at + 8)
        assert length_crc == masked(blob[at:at + 8]), f"{path}: bad length CRC at byte {at}"
        payload = blob[at + 12:at + 12 + length]
        (payload_crc,) = struct.unpack_from("<I", blob, at + 12 + length)
        assert payload_crc == masked(payload), f"{path}: bad payload CRC at byte {at}"
        yield payload
        at += 12 + length + 4


def main():
    proto, run_dir = sys.argv[1], sys.argv[2]
    out = tempfile.mkdtemp()
    subprocess.run(["protoc", f"--proto_path={os.path.dirname(proto)}", f"--python_out={out}", proto], check=True)
    sys.path.insert(0, out)
    import tensorboard_event_pb2 as pb

    scalars = {}
    files = sorted(glob.glob(os.path.join(run_dir, "events.out.tfevents.*")))
    assert files, f"no event files in {run_dir}"
    checked = 0
    for path in files:
        for i, payload in enumerate(records(path)):
            event = pb.Event()
            event.ParseFromString(payload)
            checked += 1
            if i == 0:
                assert event.file_version == "brain.Event:2", f"{path}: first record is not the file version"
            for value in event.summary.value:
                scalars.setdefault(value.tag, {})[event.step] = value.simple_value

    metrics = [json.loads(line) for line in open(os.path.join(run_dir, "metrics.jsonl"))]
    pairs = {"train": {"loss": "train/loss", "lr": "train/lr", "tokens_per_second": "train/tokens_per_second"},
             "dev": {"dev_ppl": "dev/ppl", "dev_smoothed_loss": "dev/loss"}}
    compared = 0
    for entry in metrics:
        for key, tag in pairs.get(entry["kind"], {}).items():
            got = scalars[tag][entry["step"]]
            assert abs(got - entry[key]) <= 1e-6 * max(1.0, abs(entry[key])), f"{tag} at {entry['step']}: {got} vs {entry[key]}"
            compared += 1
    record = json.load(open(os.path.join(run_dir, "eval", "test.json")))
    assert abs(scalars["test/bleu"][record["step"]] - record["bleu"]) <= 1e-4, "test/bleu differs from the record"
    assert abs(scalars["test/ppl"][record["step"]] - record["ppl"]) <= 1e-4 * record["ppl"], "test/ppl differs"
    print(f"{len(files)} event files, {checked} records with valid CRCs, {compared + 2} scalars equal to "
          f"metrics.jsonl and the evaluation record; tags: {', '.join(sorted(scalars))}")


main()
