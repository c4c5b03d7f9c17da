#!/usr/bin/env python3
"""Produces a large XProf capture (~40 MB .xplane.pb) for profiling benchmarks: the train.py transformer with a
larger config (LARGE below), run for 50 steps with the profiler on for all 50.

    .cache/example-venv/bin/python examples/jax_transformer/capture_large.py [OUT_DIR] [--layers N] [--steps N]
        [--batch-size N]

OUT_DIR defaults to $FALCON_ARTIFACT_DIR, else <repo>/.cache/capture-large-out (gitignored). The capture lands at
OUT_DIR/plugins/profile/<run>/<host>.xplane.pb (with metrics.jsonl and config_effective.json beside it, as train.py
writes them); the script prints its path and size. Measured with jax 0.10.2 on a 2-core CPU VM: see README.md.
The size grows about linearly with layers x steps (more XLA ops and thread-pool events per step), much less with
d_model/batch (those make each op slower, not more numerous), so `--layers` is the knob for a different size.
Delete the output afterwards; do not commit it.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in examples/
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train  # noqa: E402

LARGE = {
    "model": "jax-transformer-large-capture",
    "layers": 26,
    "d_model": 64,
    "heads": 4,
    "seq_len": 64,
    "batch_size": 8,
    "steps": 50,
    "remat": "none",
    "precision": "fp32",
}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    default_out = os.environ.get("FALCON_ARTIFACT_DIR") or os.path.join(repo, ".cache", "capture-large-out")
    p.add_argument("out_dir", nargs="?", default=default_out)
    p.add_argument("--layers", type=int, default=LARGE["layers"])
    p.add_argument("--steps", type=int, default=LARGE["steps"])
    p.add_argument("--batch-size", type=int, default=LARGE["batch_size"], help="a second capture for A/B compare")
    args = p.parse_args()

    try:
        cfg = train.validate({**train.DEFAULTS, **LARGE, "layers": args.layers, "steps": args.steps, "batch_size": args.batch_size})
    except train.ConfigError as e:
        print(f"capture_large.py: error: bad config: {e}", file=sys.stderr)
        return 2
    before = set(glob.glob(os.path.join(args.out_dir, "plugins", "profile", "*", "*.xplane.pb")))
    start = time.perf_counter()
    train.run(cfg, (0, cfg["steps"]), args.out_dir, source="capture_large.py")
    elapsed = time.perf_counter() - start
    new = sorted(set(glob.glob(os.path.join(args.out_dir, "plugins", "profile", "*", "*.xplane.pb"))) - before)
    if not new:
        print("capture_large.py: error: no .xplane.pb was written", file=sys.stderr)
        return 1
    for path in new:
        print(f"{path}\t{os.path.getsize(path) / 1e6:.1f} MB")
    print(f"capture_large.py: {cfg['steps']} profiled steps of {cfg['layers']} layers in {elapsed:.1f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
