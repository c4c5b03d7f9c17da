#!/usr/bin/env python3
"""Runs Apache Otava's change-point detection on benchmark series.

For each file (one value per line; a folder means every *.txt in it) calls
``otava.analysis.compute_change_points(values, window_len=50, max_pvalue=0.001)`` -- the defaults of
``otava analyze`` in Otava 0.8.0 (window 50, p 0.001, magnitude 0) -- once to warm up and then --repeat times
(--repeat 0: the warm-up call's result, untimed),
and prints the indices it reports and the median and minimum wall time, as one JSON line per file (--json)
or as text with precision/recall (+-5 points) against the true change points.

Usage: run_otava.py PATH [PATH ...] [--repeat N] [--json]
"""

import argparse
import json
import pathlib
import statistics
import time

from otava.analysis import compute_change_points

from score import hits, truth


def files(paths):
    for p in map(pathlib.Path, paths):
        yield from (sorted(p.glob("*.txt")) if p.is_dir() else [p])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    for path in files(args.paths):
        values = [float(line) for line in path.read_text().splitlines() if line.strip()]
        cps, _weak = compute_change_points(list(values), window_len=50, max_pvalue=0.001)  # warm-up
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            cps, _weak = compute_change_points(list(values), window_len=50, max_pvalue=0.001)
            times.append(time.perf_counter() - t0)
        found = sorted(int(cp.index) for cp in cps)
        row = {"tool": "otava", "file": str(path), "n": len(values), "indices": found,
               "wall_s_median": statistics.median(times) if times else None,
               "wall_s_min": min(times) if times else None}
        if args.json:
            print(json.dumps(row))
        else:
            true = truth(str(path), len(values))
            h = hits(found, true)
            precision = h / len(found) if found else 1.0
            recall = h / len(true) if true else 1.0
            ms = f"{row['wall_s_median'] * 1e3:.1f} ms" if times else "not timed"
            print(f"{path}: n={len(values)} found={len(found)} hits={h} precision={precision:.3f} "
                  f"recall={recall:.3f} time median={ms}")
            print(f"  indices: {found}")


if __name__ == "__main__":
    main()
