"""The fault campaign's synthetic experiment: about a second of work that writes what a real one does.

    python3 workload.py IDX LEDGER [ARTIFACT_KIB]

Ten steps of 0.1 s, each a metrics line ({"step", "step_time_s", "time"}) and a log line; then two artifacts whose
contents are a function of IDX (out/data.bin, ARTIFACT_KIB KiB, default 64; out/summary.json), so the campaign can
check every stored byte; last, one line `end IDX JOB_NAME` appended to LEDGER — how the campaign counts the runs
that finished (a duplicate is a second `end` for one IDX).
"""

import hashlib
import json
import os
import sys
import time

idx, ledger = sys.argv[1], sys.argv[2]
kib = int(sys.argv[3]) if len(sys.argv) > 3 else 64
out = os.environ["FALCON_ARTIFACT_DIR"]


def content(idx, kib):
    block = hashlib.sha256(f"falcon-fault-{idx}".encode()).digest()
    return (block * (kib * 1024 // len(block) + 1))[: kib * 1024]


with open(os.path.join(out, "metrics.jsonl"), "a") as metrics:
    for step in range(10):
        time.sleep(0.1)
        metrics.write(json.dumps({"step": step, "step_time_s": 0.1, "time": time.time()}) + "\n")
        metrics.flush()
        print(f"experiment {idx}: step {step} done", flush=True)

os.makedirs(os.path.join(out, "out"), exist_ok=True)
with open(os.path.join(out, "out", "data.bin"), "wb") as f:
    f.write(content(idx, kib))
with open(os.path.join(out, "out", "summary.json"), "w") as f:
    json.dump({"idx": idx, "steps": 10}, f)

fd = os.open(ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
os.write(fd, f"end {idx} {os.environ.get('FALCON_JOB_NAME', '?')}\n".encode())
os.fsync(fd)
os.close(fd)
