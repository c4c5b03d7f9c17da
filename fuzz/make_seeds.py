#!/usr/bin/env python3
"""Writes the fuzzer's seed corpus (seeds/decode/) from the real captures in crates/falcon-xplane/tests/data/.

A truncated prefix of a capture makes a poor seed (the first plane's length prefix already runs past the
end, so the decoder stops at byte 1). Instead each seed is a small but complete XSpace cut out of a
capture at the wire level: every plane with its first few lines, each with its first few events (stats
included), and the first few event/stat metadata entries, re-encoded with correct lengths. Seeds stay a
few KiB, so the committed corpus is small and libFuzzer's default max_len stays useful.

    python3 fuzz/make_seeds.py
"""

import gzip
import os
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "crates", "falcon-xplane", "tests", "data")
OUT = os.path.join(HERE, "seeds", "decode")

# (max lines per plane, events per line, event metadata, stat metadata) for each seed of a capture.
SIZES = [(1, 1, 2, 4), (1, 2, 4, 8), (3, 4, 8, 16), (4, 8, 16, 40)]
MAX_SEED = 10 << 10
MAX_FIELD = 2 << 10


def varint(buf, pos):
    shift = value = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def fields(buf):
    """(field, wire, raw bytes of the whole field incl. key, payload for LEN fields)."""
    pos = 0
    while pos < len(buf):
        start = pos
        key, pos = varint(buf, pos)
        field, wire = key >> 3, key & 7
        payload = None
        if wire == 0:
            _, pos = varint(buf, pos)
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        elif wire == 2:
            n, pos = varint(buf, pos)
            payload = buf[pos : pos + n]
            pos += n
        else:
            raise ValueError(f"group wire type at {start}")
        yield field, wire, buf[start:pos], payload


def enc_varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def lenfield(field, payload):
    return enc_varint(field << 3 | 2) + enc_varint(len(payload)) + payload


def shrink_line(buf, events):
    out, n = bytearray(), 0
    for f, _, raw, _ in fields(buf):
        if f == 4:
            n += 1
            if n > events:
                continue
        out += raw
    return bytes(out)


def shrink_plane(buf, lines, events, evmd, statmd):
    out, counts = bytearray(), {3: 0, 4: 0, 5: 0}
    limits = {3: lines, 4: evmd, 5: statmd}
    for f, _, raw, payload in fields(buf):
        if f != 3 and len(raw) > MAX_FIELD:
            continue  # e.g. an event metadata entry carrying a whole serialized HLO module
        if f in counts:
            counts[f] += 1
            if counts[f] > limits[f]:
                continue
            if f == 3:
                out += lenfield(3, shrink_line(payload, events))
                continue
        out += raw
    return bytes(out)


def seed(capture, lines, events, evmd, statmd):
    out = bytearray()
    for f, _, raw, payload in fields(capture):
        out += lenfield(1, shrink_plane(payload, lines, events, evmd, statmd)) if f == 1 else raw
    return bytes(out)


def compressed_seed():
    """One plane, line and event whose stats hold a gzip and a zlib `compressed_str_value` (field 8)."""
    text = b"%fusion.1 = f32[8,64]{1,0} fusion(f32[8,64]{1,0} %p0), kind=kLoop, calls=%fused_computation"

    def stat(sid, field, payload):
        return enc_varint(1 << 3) + enc_varint(sid) + lenfield(field, payload)

    event = enc_varint(1 << 3) + enc_varint(1) + enc_varint(2 << 3) + enc_varint(5) + enc_varint(3 << 3) + enc_varint(7)
    event += lenfield(4, stat(1, 8, gzip.compress(text, mtime=0)))
    event += lenfield(4, stat(2, 8, zlib.compress(text)))
    line = enc_varint(1 << 3) + enc_varint(1) + lenfield(2, b"XLA Ops") + lenfield(4, event)
    evmd = lenfield(2, enc_varint(1 << 3) + enc_varint(1) + lenfield(2, b"fusion.1"))
    evmd_entry = enc_varint(1 << 3) + enc_varint(1) + evmd
    smd = [enc_varint(1 << 3) + enc_varint(i) + lenfield(2, enc_varint(1 << 3) + enc_varint(i) + lenfield(2, n)) for i, n in [(1, b"hlo_text"), (2, b"long_name")]]
    plane = lenfield(2, b"/device:TPU:0") + lenfield(3, line) + lenfield(4, evmd_entry) + b"".join(lenfield(5, e) for e in smd)
    return lenfield(1, plane)


def main():
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, "compressed_str.pb")
    with open(path, "wb") as f:
        f.write(compressed_seed())
    print(f"{path}: {os.path.getsize(path)} bytes")
    for name in sorted(os.listdir(DATA)):
        if not name.endswith(".xplane.pb"):
            continue
        with open(os.path.join(DATA, name), "rb") as f:
            capture = f.read()
        stem = name[: -len(".xplane.pb")]
        for i, size in enumerate(SIZES):
            s = seed(capture, *size)
            if len(s) > MAX_SEED:
                print(f"skip {stem} {size}: {len(s)} bytes", file=sys.stderr)
                continue
            path = os.path.join(OUT, f"{stem}-{i}.pb")
            with open(path, "wb") as f:
                f.write(s)
            print(f"{path}: {len(s)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
