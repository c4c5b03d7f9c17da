#!/usr/bin/env python3
"""Writes the change-point benchmark series, one value per line.

The issue's series: four equal segments with means 100, 108, 104, 96 and Gaussian noise (sigma 3), from
numpy ``default_rng(0)``, for n = 1,000 and n = 10,000 -> series_1000.txt, series_10000.txt. The true change
points are n/4, n/2 and 3n/4 (the first index of each new segment).

With --draws K it also writes, for each n, K more draws of the same generator (default_rng(seed) for
seed = 1..K, steps_<n>_seed<seed>.txt) and K series of pure noise (mean 100, sigma 3, default_rng(1000 +
seed) for seed = 0..K-1, noise_<n>_seed<seed>.txt; no change points), so precision and recall are measured
over many series, not one.

With --small K it writes instead the small-n scenario of issue 16 (nightly runs): 4 runs at level 100, then
r = 1, 2, 3, 5, 7 runs at 100 * (1 + s) for s = 10 %, 20 %, 30 %, 60 %, each run's value log-normal with
sigma 0.06 (run-level CV ~6 %), K draws each (default_rng([round(100 s), r, seed]),
small_s<100 s>_r<r>_seed<seed>.txt; the true change point is index 4), and K stable series of each length
5, 6, 7, 9, 11, 20, 60 (same noise, no shift; default_rng([999, n, seed]), stable_n<n>_seed<seed>.txt).

Usage: gen_series.py [OUT_DIR] [--draws K] [--small K]   (OUT_DIR default: .cache/otava-bench under the repo root)
"""

import argparse
import pathlib

import numpy as np

MEANS = (100.0, 108.0, 104.0, 96.0)
SIGMA = 3.0
SIZES = (1_000, 10_000)


def steps(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    means = np.repeat(np.array(MEANS), n // len(MEANS))
    return means + rng.normal(0.0, SIGMA, size=means.size)


def noise(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(1000 + seed).normal(100.0, SIGMA, size=n)


SMALL_BEFORE = 4
SMALL_SHIFTS = (0.10, 0.20, 0.30, 0.60)
SMALL_AFTER = (1, 2, 3, 5, 7)
SMALL_STABLE = (5, 6, 7, 9, 11, 20, 60)
RUN_CV = 0.06


def small(shift: float, after: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng([round(100 * shift), after, seed])
    level = np.array([100.0] * SMALL_BEFORE + [100.0 * (1.0 + shift)] * after)
    return level * np.exp(RUN_CV * rng.normal(size=level.size))


def stable(n: int, seed: int) -> np.ndarray:
    return 100.0 * np.exp(RUN_CV * np.random.default_rng([999, n, seed]).normal(size=n))


def write(path: pathlib.Path, values: np.ndarray) -> None:
    # repr() keeps every bit of the double, so Otava and Falcon read identical values.
    path.write_text("".join(f"{float(v)!r}\n" for v in values))


def main() -> None:
    root = pathlib.Path(__file__).resolve().parents[2]
    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?", default=str(root / ".cache" / "otava-bench"))
    ap.add_argument("--draws", type=int, default=0)
    ap.add_argument("--small", type=int, default=0)
    args = ap.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.small:
        for seed in range(args.small):
            for shift in SMALL_SHIFTS:
                for after in SMALL_AFTER:
                    write(out / f"small_s{round(100 * shift)}_r{after}_seed{seed}.txt", small(shift, after, seed))
            for n in SMALL_STABLE:
                write(out / f"stable_n{n}_seed{seed}.txt", stable(n, seed))
        print(out)
        return
    for n in SIZES:
        write(out / f"series_{n}.txt", steps(n, 0))
        for seed in range(1, args.draws + 1):
            write(out / f"steps_{n}_seed{seed}.txt", steps(n, seed))
        for seed in range(args.draws):
            write(out / f"noise_{n}_seed{seed}.txt", noise(n, seed))
    print(out)


if __name__ == "__main__":
    main()
