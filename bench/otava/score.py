"""Scoring shared by run_otava.py and report.py: the true change points of a benchmark file, and hits."""

import pathlib

TOLERANCE = 5


SMALL_BEFORE = 4  # gen_series.py: the small-n shift is at index 4


def truth(path: str, n: int) -> list:
    """n/4, n/2, 3n/4 for the step series (series_*, steps_*); none for noise_* and stable_*; index 4 for the
    small-n scenario (small_*)."""
    name = pathlib.Path(path).name
    if name.startswith(("noise_", "stable_")):
        return []
    if name.startswith("small_"):
        return [SMALL_BEFORE]
    return [n // 4, n // 2, 3 * n // 4]


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
