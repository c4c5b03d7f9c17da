#!/usr/bin/env python3
"""Writes a pair of fp32 tensor dumps for bench/tensors/run.sh: OUT/a/t{i}.npy and OUT/b/t{i}.npy, N tensors of
SIZE_MB/N MB each per dump. B = A + 1e-6-relative noise, except tensor 0, where 16 elements are off by 1e-2 (so one
tensor fails allclose). Written one tensor at a time (memory stays at a few hundred MB).

  python bench/tensors/gen.py OUT SIZE_MB [N]
"""

import os
import sys

import numpy as np

out, size_mb = sys.argv[1], int(sys.argv[2])
n = int(sys.argv[3]) if len(sys.argv) > 3 else 8
elems = size_mb * (1 << 20) // 4 // n
rng = np.random.default_rng(7)
for side in ("a", "b"):
    os.makedirs(os.path.join(out, side), exist_ok=True)
for i in range(n):
    a = rng.standard_normal(elems, dtype=np.float32)
    b = a + (a * np.float32(1e-6)) * rng.standard_normal(elems, dtype=np.float32)
    if i == 0:
        idx = rng.integers(0, elems, 16)
        b[idx] += np.float32(1e-2)
    np.save(os.path.join(out, "a", f"t{i}.npy"), a)
    np.save(os.path.join(out, "b", f"t{i}.npy"), b)
    del a, b
print(f"{out}: {n} tensors x {elems * 4 / 2**20:.1f} MiB per dump")
