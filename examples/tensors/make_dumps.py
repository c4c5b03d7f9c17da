#!/usr/bin/env python3
"""Writes the small tensor dumps that `crates/falcon-analysis/tests/it/tensors.rs` compares, and `expected.json`
with numpy's own results for each pair, computed independently of Falcon with the same definitions:

  A is the reference, d = b - a, all in float64. max_abs_err / its index / max_rel_err (|d|/|a| over a != 0) /
  mean_abs_err / rel_l2 (||d|| / ||a||) / cosine / max_ulp are over the positions where both values are finite.
  allclose uses torch.testing.assert_close's default (rtol, atol) per dtype (the larger of the two sides' for a
  mixed pair) unless the case overrides them: close = both NaN, or a == b, or |d| <= atol + rtol*|a|; it is
  cross-checked against np.isclose(b, a, rtol, atol, equal_nan=True).

Needs numpy; bfloat16 .npy files need ml_dtypes (np.save writes an ml_dtypes bfloat16 array with descr '<V2').
Safetensors files are written by hand (8-byte little-endian header length, JSON header, raw little-endian data).

  .cache/example-venv/bin/python examples/tensors/make_dumps.py [OUT_DIR]

OUT_DIR defaults to crates/falcon-analysis/tests/data/tensors. The output is deterministic (seeded).
"""

import json
import os
import shutil
import struct
import sys
import zipfile

import numpy as np

try:
    import ml_dtypes
except ImportError:  # bfloat16 .npy cases are skipped without it
    ml_dtypes = None

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(ROOT, "crates/falcon-analysis/tests/data/tensors")

TORCH_TOL = {"f16": (1e-3, 1e-5), "bf16": (1.6e-2, 1e-5), "f32": (1.3e-6, 1e-5), "f64": (1e-7, 1e-7)}
FLOAT_RANK = {"bf16": 0, "f16": 1, "f32": 2, "f64": 3}

rng = np.random.default_rng(20260822)


# ---------------------------------------------------------------------------------------------------------
# dtypes


def dtype_name(arr):
    """Falcon's short dtype name of an array (bfloat16 arrays are ml_dtypes')."""
    if isinstance(arr, Bf16Bits) or (ml_dtypes is not None and arr.dtype == ml_dtypes.bfloat16):
        return "bf16"
    k, n = arr.dtype.kind, arr.dtype.itemsize
    return {("f", 2): "f16", ("f", 4): "f32", ("f", 8): "f64", ("b", 1): "bool"}.get((k, n), f"{'i' if k == 'i' else 'u'}{8 * n}")


class Bf16Bits(np.ndarray):
    """A uint16 array of bfloat16 bit patterns (for safetensors, without ml_dtypes)."""


def bf16_bits(x):
    """float -> bfloat16 bits, round to nearest even (as ml_dtypes and torch do), as a Bf16Bits array."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return rounded.view(Bf16Bits)


def to_f64(arr):
    """Exact float64 values of an array (bfloat16 from its bits)."""
    if isinstance(arr, Bf16Bits) or (ml_dtypes is not None and arr.dtype == ml_dtypes.bfloat16):
        bits = np.asarray(arr).view(np.uint16).astype(np.uint32) << 16
        return bits.view(np.float32).astype(np.float64)
    return np.asarray(arr).astype(np.float64)


def ordered(x, name):
    """Values rounded to float dtype `name`, as integers where adjacent representable values are adjacent."""
    if name == "f64":
        bits = [int(v) for v in x.astype(np.float64).view(np.uint64)]
        return [-(b & ((1 << 63) - 1)) if b >> 63 else b for b in bits]
    if name == "bf16":
        b = np.asarray(bf16_bits(x.astype(np.float32))).view(np.uint16).astype(np.int64)
        sign = 0x8000
    elif name == "f16":
        b = x.astype(np.float16).view(np.uint16).astype(np.int64)
        sign = 0x8000
    else:
        b = x.astype(np.float32).view(np.uint32).astype(np.int64)
        sign = 0x80000000
    return [int(v) for v in np.where(b & sign, -(b & (sign - 1)), b)]


# ---------------------------------------------------------------------------------------------------------
# numpy's metrics


def num(v):
    v = float(v)
    return v if np.isfinite(v) else None


def metrics(name, a_name, a, b, fortran=False, rtol=None, atol=None):
    ta, tb = dtype_name(a), dtype_name(b)
    order = "F" if fortran else "C"
    shape = list(np.shape(a))
    fa, fb = to_f64(a).ravel(order), to_f64(b).ravel(order)
    n = fa.size
    fin = np.isfinite(fa) & np.isfinite(fb)
    pos = np.nonzero(fin)[0]
    x, y = fa[fin], fb[fin]
    d = y - x
    ad = np.abs(d)
    r0, a0 = (max(TORCH_TOL.get(ta, (0, 0))[0], TORCH_TOL.get(tb, (0, 0))[0]), max(TORCH_TOL.get(ta, (0, 0))[1], TORCH_TOL.get(tb, (0, 0))[1]))
    rtol = r0 if rtol is None else rtol
    atol = a0 if atol is None else atol
    out = {"name": name, "a_name": a_name, "dtype": ta, "dtype_b": tb if tb != ta else None, "shape": shape, "elements": n}
    if x.size:
        i = int(np.argmax(ad))  # first maximum, in storage order
        out["max_abs_err"] = float(ad[i])
        out["max_abs_err_index"] = [int(v) for v in np.unravel_index(int(pos[i]), shape, order=order)] if shape else []
        out["a_at_max_abs_err"], out["b_at_max_abs_err"] = float(x[i]), float(y[i])
        out["mean_abs_err"] = float(ad.mean())
    else:
        out.update(max_abs_err=0.0, max_abs_err_index=None, a_at_max_abs_err=None, b_at_max_abs_err=None, mean_abs_err=0.0)
    nz = x != 0
    out["max_rel_err"] = float((ad[nz] / np.abs(x[nz])).max()) if nz.any() else None
    out["zero_a_nonzero_b"] = int(((x == 0) & (y != 0)).sum())
    na, nb, nd = np.linalg.norm(x), np.linalg.norm(y), np.linalg.norm(d)
    out["rel_l2"] = num(nd / na) if na > 0 else (0.0 if nd == 0 else None)
    out["cosine"] = num(np.dot(x, y) / (na * nb)) if na > 0 and nb > 0 else None
    if ta in FLOAT_RANK and tb in FLOAT_RANK:
        u = ta if FLOAT_RANK[ta] <= FLOAT_RANK[tb] else tb
        oa, ob = ordered(x, u), ordered(y, u)
        out["max_ulp"] = max((abs(p - q) for p, q in zip(oa, ob)), default=0)
    else:
        out["max_ulp"] = None
    close = (np.isnan(fa) & np.isnan(fb)) | (fa == fb)
    close[fin] |= np.abs(fb[fin] - fa[fin]) <= atol + rtol * np.abs(fa[fin])
    # numpy's own isclose, with B as the candidate and A as the reference, must agree.
    assert (np.isclose(fb, fa, rtol=rtol, atol=atol, equal_nan=True) == close).all(), name
    out["rtol"], out["atol"] = rtol, atol
    out["allclose"] = bool(close.all())
    out["close_fraction"] = float(close.mean()) if n else 1.0
    out["nan_a"], out["nan_b"] = int(np.isnan(fa).sum()), int(np.isnan(fb).sum())
    out["inf_a"], out["inf_b"] = int(np.isinf(fa).sum()), int(np.isinf(fb).sum())
    return out


# ---------------------------------------------------------------------------------------------------------
# writers


def save_npy(path, arr, version=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        if version is None:
            np.save(f, arr)
        else:
            np.lib.format.write_array(f, arr, version=version)


ST_DTYPE = {"f16": "F16", "bf16": "BF16", "f32": "F32", "f64": "F64", "i32": "I32", "i64": "I64", "bool": "BOOL", "u8": "U8"}


def save_safetensors(path, tensors):
    """The safetensors format by hand: u64 LE header length, JSON header (padded with spaces to 8 bytes),
    then each tensor's little-endian bytes, in order."""
    header, blobs, off = {"__metadata__": {"format": "pt", "writer": "examples/tensors/make_dumps.py"}}, [], 0
    for name, arr in tensors.items():
        raw = np.ascontiguousarray(arr)
        data = raw.view(np.uint16).astype("<u2").tobytes() if dtype_name(arr) == "bf16" else raw.astype(raw.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": ST_DTYPE[dtype_name(arr)], "shape": list(arr.shape), "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def noisy(a, rel, dtype=None, rng=rng):
    x = to_f64(a)
    y = x * (1 + rel * rng.standard_normal(x.shape))
    return y.astype(dtype or np.asarray(a).dtype)


def randn(shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


# ---------------------------------------------------------------------------------------------------------
# cases


def main():
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    cases = []

    def case(name, a, b, tensors, only_in_a=(), only_in_b=(), shape_mismatches=(), **opts):
        cases.append(dict(name=name, a=a, b=b, tensors=tensors, only_in_a=sorted(only_in_a), only_in_b=sorted(only_in_b),
                          shape_mismatches=sorted(shape_mismatches), **opts))

    p = lambda *parts: os.path.join(OUT, *parts)

    # Single .npy pairs, one per float dtype: a passing f32 pair, a failing one (one element off), f16, f64.
    a = randn((16, 33), np.float32)
    b = noisy(a, 2e-7)
    save_npy(p("f32_pass_a.npy"), a)
    save_npy(p("f32_pass_b.npy"), b)
    case("npy f32 pass", "f32_pass_a.npy", "f32_pass_b.npy", [metrics("f32_pass_b", "f32_pass_a", a, b)])

    b2 = b.copy()
    b2[7, 20] += np.float32(3e-3)
    save_npy(p("f32_fail_b.npy"), b2)
    case("npy f32 fail", "f32_pass_a.npy", "f32_fail_b.npy", [metrics("f32_fail_b", "f32_pass_a", a, b2)])
    case("npy f32 loose tolerances", "f32_pass_a.npy", "f32_fail_b.npy",
         [metrics("f32_fail_b", "f32_pass_a", a, b2, rtol=1e-2, atol=1e-3)], rtol=1e-2, atol=1e-3)

    a = randn((40,), np.float16)
    b = noisy(a, 2e-3)
    save_npy(p("f16_a.npy"), a)
    save_npy(p("f16_b.npy"), b)
    case("npy f16", "f16_a.npy", "f16_b.npy", [metrics("f16_b", "f16_a", a, b)])

    a = rng.standard_normal((3, 4, 5))
    b = noisy(a, 1e-9)
    save_npy(p("f64_a.npy"), a)
    save_npy(p("f64_b.npy"), b)
    case("npy f64", "f64_a.npy", "f64_b.npy", [metrics("f64_b", "f64_a", a, b)])

    # Format versions 2.0 and 3.0 (same data as the f64 pair).
    save_npy(p("f64_v2_a.npy"), a, version=(2, 0))
    save_npy(p("f64_v3_b.npy"), b, version=(3, 0))
    case("npy format 2.0 vs 3.0", "f64_v2_a.npy", "f64_v3_b.npy", [metrics("f64_v3_b", "f64_v2_a", a, b)])

    # Big-endian C order (A) against little-endian Fortran order (B): same logical values plus noise.
    a = randn((5, 7), np.float32).astype(">f4")
    b = np.asfortranarray(noisy(a, 1e-4).astype("<f4"))
    save_npy(p("be_c_a.npy"), a)
    save_npy(p("le_f_b.npy"), b)
    case("npy big-endian C vs Fortran", "be_c_a.npy", "le_f_b.npy", [metrics("le_f_b", "be_c_a", a, b)])
    # Both Fortran: compared in storage (Fortran) order.
    af = np.asfortranarray(a.astype("<f4"))
    save_npy(p("f_a.npy"), af)
    case("npy Fortran vs Fortran", "f_a.npy", "le_f_b.npy", [metrics("le_f_b", "f_a", af, b, fortran=True)])

    # bfloat16 as np.save writes an ml_dtypes array ('<V2').
    if ml_dtypes is not None:
        a = randn((64,), np.float32).astype(ml_dtypes.bfloat16)
        b = noisy(a, 1e-2, dtype=ml_dtypes.bfloat16)
        save_npy(p("bf16_a.npy"), a)
        save_npy(p("bf16_b.npy"), b)
        case("npy bf16 (ml_dtypes <V2)", "bf16_a.npy", "bf16_b.npy", [metrics("bf16_b", "bf16_a", a, b)])

    # Directories: nested names, a mapping file, only-in-A/B names, a shape mismatch, NaN/Inf, ints, bools, and a
    # mixed-dtype pair (f16 in A, f32 in B).
    ta = {
        "embed": randn((10, 8), np.float32),
        "layer0/attn/q": randn((4, 6), np.float32),
        "layer0/mlp": randn((12,), np.float32),
        "only_a": randn((3,), np.float32),
        "shape": randn((3, 4), np.float32),
        "ids": rng.integers(-50, 50, size=(9,)).astype(np.int64),
        "mask": rng.integers(0, 2, size=(11,)).astype(bool),
        "half": randn((6, 5), np.float16),
        "zeros": np.zeros((4,), np.float32),
    }
    sp = randn((20,), np.float32)
    sp[[2, 9]] = np.nan
    sp[5] = np.inf
    sp[6] = -np.inf
    sp[11] = 0.0
    ta["special"] = sp
    tb = {
        "embed": noisy(ta["embed"], 1e-7),
        "l0/q": noisy(ta["layer0/attn/q"], 1e-3),
        "layer0/mlp": ta["layer0/mlp"].copy(),
        "only_b": randn((3,), np.float32),
        "shape": randn((4, 3), np.float32),
        "ids": ta["ids"] + (np.arange(9) == 4),
        "mask": ta["mask"].copy(),
        "half": noisy(ta["half"], 1e-4, dtype=np.float32),
        "zeros": np.array([0, 0, 1e-6, 0], np.float32),
    }
    spb = noisy(sp, 1e-7)
    spb[2] = np.nan  # NaN in both: close
    spb[9] = 1.0  # NaN only in A: not close
    spb[11] = 2.5e-6  # a == 0, b != 0
    spb[14] = np.nan  # NaN only in B
    tb["special"] = spb
    for k, v in ta.items():
        save_npy(p("dir_a", k + ".npy"), v)
    for k, v in tb.items():
        save_npy(p("dir_b", k + ".npy"), v)
    with open(p("dir_map.txt"), "w") as f:
        f.write("# A name      B name\nlayer0/attn/q  l0/q   # renamed in B\nnot_in_a=whatever\n")
    names = [k for k in ta if k in tb and k != "shape"]
    dir_tensors = [metrics(k, k, ta[k], tb[k]) for k in names] + [metrics("l0/q", "layer0/attn/q", ta["layer0/attn/q"], tb["l0/q"])]
    case("directory with map", "dir_a", "dir_b", dir_tensors, only_in_a=["only_a"], only_in_b=["only_b"],
         shape_mismatches=["shape"], map="dir_map.txt")
    case("directory without map", "dir_a", "dir_b", [metrics(k, k, ta[k], tb[k]) for k in names],
         only_in_a=["only_a", "layer0/attn/q"], only_in_b=["only_b", "l0/q"], shape_mismatches=["shape"])

    # .npz: stored (np.savez) against deflated (np.savez_compressed), with a Fortran-order member on each side.
    za = {"x": randn((30,), np.float32), "y": rng.standard_normal((4, 4)), "w": np.asfortranarray(randn((3, 5), np.float32)),
          "h": randn((9,), np.float16)}
    zb = {"x": noisy(za["x"], 1e-5), "y": noisy(za["y"], 1e-12), "w": np.asfortranarray(noisy(za["w"], 1e-6)), "h": noisy(za["h"], 5e-4)}
    np.savez(p("stored_a.npz"), **za)
    np.savez_compressed(p("deflated_b.npz"), **zb)
    with zipfile.ZipFile(p("stored_a.npz")) as z:
        assert all(i.compress_type == zipfile.ZIP_STORED for i in z.infolist())
    with zipfile.ZipFile(p("deflated_b.npz")) as z:
        assert all(i.compress_type == zipfile.ZIP_DEFLATED for i in z.infolist())
    case("npz stored vs deflated", "stored_a.npz", "deflated_b.npz",
         [metrics(k, k, za[k], zb[k], fortran=(k == "w")) for k in za])

    # safetensors, written by hand: F32 F16 BF16 F64 I32 BOOL.
    base = randn((4, 8), np.float32)
    sa = {"w_f32": randn((8, 9), np.float32), "w_f16": randn((20,), np.float16), "w_bf16": bf16_bits(base),
          "w_f64": rng.standard_normal((5,)), "steps": np.arange(6, dtype=np.int32), "flags": np.array([1, 0, 1, 1, 0, 0, 1], bool)}
    sb = {"w_f32": noisy(sa["w_f32"], 3e-6), "w_f16": noisy(sa["w_f16"], 1e-3),
          "w_bf16": bf16_bits(to_f64(sa["w_bf16"]) * (1 + 1e-2 * rng.standard_normal((4, 8)))),
          "w_f64": noisy(sa["w_f64"], 5e-8), "steps": np.arange(6, dtype=np.int32), "flags": sa["flags"].copy()}
    sb["flags"][3] = False
    save_safetensors(p("a.safetensors"), sa)
    save_safetensors(p("b.safetensors"), sb)
    case("safetensors", "a.safetensors", "b.safetensors", [metrics(k, k, sa[k], sb[k]) for k in sa])

    # Across formats: the npz's stored members against a directory holding the same names.
    for k, v in zb.items():
        save_npy(p("npz_as_dir", k + ".npy"), v)
    case("npz vs directory", "stored_a.npz", "npz_as_dir",
         [metrics(k, k, za[k], zb[k], fortran=(k == "w")) for k in za])

    with open(p("expected.json"), "w") as f:
        json.dump({"generator": "examples/tensors/make_dumps.py", "numpy": np.__version__, "cases": cases}, f, indent=1)
        f.write("\n")
    total = sum(os.path.getsize(os.path.join(d, n)) for d, _, ns in os.walk(OUT) for n in ns)
    print(f"wrote {len(cases)} cases to {OUT} ({total} bytes)")


if __name__ == "__main__":
    main()
