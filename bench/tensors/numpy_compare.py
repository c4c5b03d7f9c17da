#!/usr/bin/env python3
"""The numpy side of bench/tensors/run.sh: the metrics of `falcon accuracy tensors A B` (A the reference) for two
directories of fp32 .npy files, written the way a user would: np.load each pair whole, then float64 numpy
expressions, one tensor at a time. Same definitions as Falcon (crates/falcon-analysis/src/tensors/metrics.rs):
error metrics over positions finite on both sides; close = both NaN, or a == b, or |b-a| <= atol + rtol*|a| with
torch.testing's fp32 defaults (1.3e-6, 1e-5). Prints a JSON report shaped like Falcon's (the subset of fields).

  python bench/tensors/numpy_compare.py A_DIR B_DIR
"""

import json
import os
import sys
import time

import numpy as np

RTOL, ATOL = 1.3e-6, 1e-5


def names(d):
    return sorted(f[:-4] for f in os.listdir(d) if f.endswith(".npy"))


def compare(a, b):
    x, y = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    fin = np.isfinite(x) & np.isfinite(y)
    all_finite = bool(fin.all())
    xf, yf = (x, y) if all_finite else (x[fin], y[fin])
    d = yf - xf
    ad = np.abs(d)
    i = int(np.argmax(ad))
    ax = np.abs(xf)
    nz = ax > 0
    rel = (ad[nz] / ax[nz]).max() if nz.any() else None
    na, nb, nd = np.linalg.norm(xf), np.linalg.norm(yf), np.linalg.norm(d)
    ua = a.ravel()[fin].view(np.int32).astype(np.int64) if not all_finite else a.ravel().view(np.int32).astype(np.int64)
    ub = b.ravel()[fin].view(np.int32).astype(np.int64) if not all_finite else b.ravel().view(np.int32).astype(np.int64)
    ua = np.where(ua < 0, -(ua & 0x7FFFFFFF), ua)
    ub = np.where(ub < 0, -(ub & 0x7FFFFFFF), ub)
    close = np.isclose(y, x, rtol=RTOL, atol=ATOL, equal_nan=True)
    return {
        "max_abs_err": float(ad[i]),
        "max_abs_err_index": [int(v) for v in np.unravel_index(int(np.nonzero(fin)[0][i]) if not all_finite else i, a.shape)],
        "max_rel_err": None if rel is None else float(rel),
        "mean_abs_err": float(ad.mean()),
        "rel_l2": float(nd / na) if na > 0 else None,
        "cosine": float(np.dot(xf, yf) / (na * nb)) if na > 0 and nb > 0 else None,
        "max_ulp": int(np.abs(ua - ub).max()),
        "allclose": bool(close.all()),
        "close_fraction": float(close.mean()),
        "nan_a": int(np.isnan(x).sum()), "nan_b": int(np.isnan(y).sum()),
        "inf_a": int(np.isinf(x).sum()), "inf_b": int(np.isinf(y).sum()),
    }


def main():
    da, db = sys.argv[1], sys.argv[2]
    t0 = time.perf_counter()
    tensors, nbytes = [], 0
    for n in sorted(set(names(da)) & set(names(db))):
        a = np.load(os.path.join(da, n + ".npy"))
        b = np.load(os.path.join(db, n + ".npy"))
        nbytes += a.nbytes + b.nbytes
        tensors.append({"name": n, **compare(a, b)})
        del a, b
    print(json.dumps({"a": da, "b": db, "tensors": tensors, "bytes_compared": nbytes, "seconds": time.perf_counter() - t0}))


if __name__ == "__main__":
    main()
