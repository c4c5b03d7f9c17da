"""Scoring shared by run_otava.py and report.py: the true change points of a benchmark file, and hits."""

import pathlib

TOLERANCE = 5


def truth(path: str, n: int) -> list:
    """n/4, n/2, 3n/4 for the step series (series_*, steps_*); none for noise_*."""
    return [] if pathlib.Path(path).name.startswith("noise_") else [n // 4, n // 2, 3 * n // 4]


def hits(found: list, true: list, tol: int = TOLERANCE) -> int:
    """Reported indices within +-tol of a true change point, each true point matched at most once."""
    unmatched = list(true)
    count = 0
    for i in found:
        near = [t for t in unmatched if abs(t - i) <= tol]
        if near:
            unmatched.remove(min(near, key=lambda t: abs(t - i)))
            count += 1
    return count
