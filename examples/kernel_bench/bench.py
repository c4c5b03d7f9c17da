#!/usr/bin/env python3
"""Kernel bench: times a few implementations ("variants") of JAX kernels against a reference, as a Falcon workload.

Kernels and variants (every variant of a kernel solves the same problem as its reference):

  matmul     C = A @ B, A: [m, k], B: [k, n]
    jnp_dot              reference: jnp.dot
    fori_k{bk}           K split into blocks of bk columns, accumulated in a lax.fori_loop
    tiled_einsum_b{b}    A and B reshaped into b x b tiles, one einsum over the tile grid
    fori_k{bk}_off_by_one  a deliberately wrong kernel: the loop misses the last K block (the check marks it
                         correct=false; it is faster, which is why fast_p counts only correct rows)
  attention  O = softmax(Q K^T / sqrt(d)) V, Q, K, V: [b, h, s, d]
    naive                reference: the full s x s score matrix, jax.nn.softmax
    online_softmax_c{c}  K/V in chunks of c rows, running max / denominator (flash-attention style) in lax.scan

Method (KernelBench / Pallas-docs practice on CPU): inputs from jax.random.normal with a fixed seed; every variant is
jitted; `warmup` calls (the first compiles) are not timed; then `samples` timed calls, each
`time.perf_counter()` around `f(*args).block_until_ready()`, taken round-robin over the variants of one
(kernel, shape, dtype) so that machine drift affects them alike. Correctness: np.allclose(variant, reference,
atol=rtol=tol) with KernelBench's tolerances (fp32 1e-4, bf16 1e-2), computed once on the warm-up output.
FLOPs and bytes per call are the problem's, computed analytically (matmul 2mkn FLOPs and (mk + kn + mn) elements;
attention 4·b·h·s²·d FLOPs and 4·b·h·s·d elements: Q, K, V read once and O written once), the same for every
variant, so achieved TFLOP/s compare like for like.

Config: defaults, then the JSON at $FALCON_EXP_CONFIG (or --config PATH; the `config` snapshot or a whole spec),
then CLI flags given explicitly. Keys: samples, warmup, dtypes (list of fp32 | bf16), kernels (list of matmul |
attention), matmul_shapes (list of [m, k, n]), attention_shapes (list of [b, h, s, d]), block_sizes (matmul),
chunk_sizes (attention), seed.

Writes $FALCON_ARTIFACT_DIR/kernel_bench_results.jsonl (default ./artifacts): one JSON object per
(kernel, variant, shape, dtype) in the format of examples/kernel_bench/README.md. Exit status 2 with a message
on stderr when the config is unusable.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from typing import Any, Callable

DEFAULTS: dict[str, Any] = {
    "samples": 30,
    "warmup": 3,
    "dtypes": ["fp32"],
    "kernels": ["matmul", "attention"],
    "matmul_shapes": [[256, 256, 256], [512, 512, 512]],
    "attention_shapes": [[1, 4, 256, 64], [1, 4, 512, 64]],
    "block_sizes": [64, 128],
    "chunk_sizes": [64, 128],
    "seed": 0,
}

# KernelBench's correctness tolerance per precision (atol = rtol = tol).
TOLERANCE = {"fp32": 1e-4, "bf16": 1e-2}
ITEMSIZE = {"fp32": 4, "bf16": 2}
KERNELS = ("matmul", "attention")


class ConfigError(Exception):
    """The config cannot be used; the message says which key and why."""


def load_config(argv: list[str]) -> tuple[dict[str, Any], str]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", help="JSON config (default: $FALCON_EXP_CONFIG)")
    parser.add_argument("--samples", type=int, help=f"timed calls per variant (default {DEFAULTS['samples']})")
    parser.add_argument("--warmup", type=int, help=f"untimed calls first (default {DEFAULTS['warmup']})")
    parser.add_argument("--dtypes", help="comma-separated: fp32,bf16 (default fp32)")
    parser.add_argument("--kernels", help="comma-separated: matmul,attention (default both)")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--hardware", help="accelerator type for the rows (default: detected: cpu, or the catalog "
                        "type of the GPU, e.g. h100-80gb-8)")
    parser.add_argument("--output", help="results file (default $FALCON_ARTIFACT_DIR/kernel_bench_results.jsonl)")
    args = parser.parse_args(argv)

    cfg = dict(DEFAULTS)
    path = args.config or os.environ.get("FALCON_EXP_CONFIG")
    if path:
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except OSError as e:
            raise ConfigError(f"cannot read the config {path}: {e.strerror}") from e
        except json.JSONDecodeError as e:
            raise ConfigError(f"the config {path} is not valid JSON: {e}") from e
        if not isinstance(doc, dict):
            raise ConfigError(f"the config {path} must hold a JSON object")
        if isinstance(doc.get("config"), dict) and ("workload" in doc or "scenario" in doc):
            doc = doc["config"]
        cfg.update({k: v for k, v in doc.items() if k in DEFAULTS})
    for key in ("samples", "warmup", "seed"):
        if getattr(args, key) is not None:
            cfg[key] = getattr(args, key)
    for key in ("dtypes", "kernels"):
        if getattr(args, key) is not None:
            cfg[key] = [s.strip() for s in getattr(args, key).split(",") if s.strip()]
    validate(cfg)
    cfg["hardware"] = args.hardware
    out_dir = os.environ.get("FALCON_ARTIFACT_DIR") or "artifacts"
    output = args.output or os.path.join(out_dir, "kernel_bench_results.jsonl")
    return cfg, output


def validate(cfg: dict[str, Any]) -> None:
    for key in ("samples", "warmup", "seed"):
        if not isinstance(cfg[key], int) or isinstance(cfg[key], bool) or cfg[key] < 0:
            raise ConfigError(f"`{key}` must be a non-negative integer, not {cfg[key]!r}")
    if cfg["samples"] < 1:
        raise ConfigError("`samples` must be at least 1")
    for d in cfg["dtypes"]:
        if d not in TOLERANCE:
            raise ConfigError(f"`dtypes`: unknown dtype {d!r} (use fp32 or bf16)")
    for k in cfg["kernels"]:
        if k not in KERNELS:
            raise ConfigError(f"`kernels`: unknown kernel {k!r} (use {', '.join(KERNELS)})")
    for key, rank in (("matmul_shapes", 3), ("attention_shapes", 4)):
        for shape in cfg[key]:
            if not (isinstance(shape, list) and len(shape) == rank and all(isinstance(x, int) and x > 0 for x in shape)):
                raise ConfigError(f"`{key}`: each shape must be a list of {rank} positive integers, not {shape!r}")
    for key in ("block_sizes", "chunk_sizes"):
        if not all(isinstance(x, int) and x > 0 for x in cfg[key]):
            raise ConfigError(f"`{key}` must be a list of positive integers")


# --------------------------------------------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------------------------------------------


def matmul_variants(jax, jnp, m: int, k: int, n: int, blocks: list[int]) -> list[tuple[str, Callable]]:
    lax = jax.lax

    def fori_k(bk: int, skip_last: bool = False) -> Callable:
        nk = k // bk

        def f(a, b):
            def body(i, acc):
                a_blk = lax.dynamic_slice_in_dim(a, i * bk, bk, axis=1)
                b_blk = lax.dynamic_slice_in_dim(b, i * bk, bk, axis=0)
                return acc + jnp.dot(a_blk, b_blk, preferred_element_type=jnp.float32)

            acc = lax.fori_loop(0, nk - 1 if skip_last else nk, body, jnp.zeros((m, n), jnp.float32))
            return acc.astype(a.dtype)

        return f

    def tiled_einsum(bs: int) -> Callable:
        def f(a, b):
            at = a.reshape(m // bs, bs, k // bs, bs)
            bt = b.reshape(k // bs, bs, n // bs, bs)
            c = jnp.einsum("ipkq,kqjr->ipjr", at, bt, preferred_element_type=jnp.float32)
            return c.reshape(m, n).astype(a.dtype)

        return f

    variants: list[tuple[str, Callable]] = [("jnp_dot", lambda a, b: jnp.dot(a, b))]
    for bs in blocks:
        if k % bs == 0 and k // bs >= 2:
            variants.append((f"fori_k{bs}", fori_k(bs)))
        if m % bs == 0 and k % bs == 0 and n % bs == 0:
            variants.append((f"tiled_einsum_b{bs}", tiled_einsum(bs)))
    bad = max((bs for bs in blocks if k % bs == 0 and k // bs >= 2), default=None)
    if bad is not None:
        variants.append((f"fori_k{bad}_off_by_one", fori_k(bad, skip_last=True)))
    return variants


def attention_variants(jax, jnp, b: int, h: int, s: int, d: int, chunks: list[int]) -> list[tuple[str, Callable]]:
    lax = jax.lax
    scale = 1.0 / math.sqrt(d)

    def naive(q, k, v):
        scores = jnp.einsum("bhqd,bhkd->bhqk", q, k, preferred_element_type=jnp.float32) * scale
        p = jax.nn.softmax(scores, axis=-1)
        return jnp.einsum("bhqk,bhkd->bhqd", p, v.astype(jnp.float32)).astype(q.dtype)

    def online(c: int) -> Callable:
        def f(q, k, v):
            kc = k.reshape(b, h, s // c, c, d).transpose(2, 0, 1, 3, 4)
            vc = v.reshape(b, h, s // c, c, d).transpose(2, 0, 1, 3, 4)
            qf = q.astype(jnp.float32) * scale

            def step(carry, kv):
                m_prev, l_prev, acc = carry
                k_blk, v_blk = kv
                sc = jnp.einsum("bhqd,bhkd->bhqk", qf, k_blk.astype(jnp.float32))
                m_new = jnp.maximum(m_prev, sc.max(axis=-1))
                corr = jnp.exp(m_prev - m_new)
                p = jnp.exp(sc - m_new[..., None])
                l_new = l_prev * corr + p.sum(axis=-1)
                acc = acc * corr[..., None] + jnp.einsum("bhqk,bhkd->bhqd", p, v_blk.astype(jnp.float32))
                return (m_new, l_new, acc), None

            init = (
                jnp.full((b, h, s), -jnp.inf, jnp.float32),
                jnp.zeros((b, h, s), jnp.float32),
                jnp.zeros((b, h, s, d), jnp.float32),
            )
            (_, l_fin, acc), _ = lax.scan(step, init, (kc, vc))
            return (acc / l_fin[..., None]).astype(q.dtype)

        return f

    variants: list[tuple[str, Callable]] = [("naive", naive)]
    for c in chunks:
        if s % c == 0 and s // c >= 2:
            variants.append((f"online_softmax_c{c}", online(c)))
    return variants


# --------------------------------------------------------------------------------------------------------------
# Measurement
# --------------------------------------------------------------------------------------------------------------


def bench_group(np, jax, kernel: str, shape: dict[str, int], dtype: str, args: tuple, variants, cfg) -> list[dict]:
    """Times every variant of one (kernel, shape, dtype), round-robin, and checks each against the first."""
    fns = [(name, jax.jit(fn)) for name, fn in variants]
    outputs = {}
    for name, fn in fns:
        out = None
        for _ in range(max(cfg["warmup"], 1)):  # the first call compiles
            out = fn(*args)
            out.block_until_ready()
        outputs[name] = np.asarray(out.astype("float32"), dtype=np.float64)
    times: dict[str, list[float]] = {name: [] for name, _ in fns}
    for _ in range(cfg["samples"]):
        for name, fn in fns:
            t0 = time.perf_counter()
            fn(*args).block_until_ready()
            times[name].append((time.perf_counter() - t0) * 1e3)
    ref_name = fns[0][0]
    ref = outputs[ref_name]
    tol = TOLERANCE[dtype]
    rows = []
    for name, _ in fns:
        out = outputs[name]
        correct = bool(out.shape == ref.shape and np.allclose(out, ref, atol=tol, rtol=tol))
        max_abs = float(np.max(np.abs(out - ref))) if out.shape == ref.shape else None
        rows.append(
            {
                "kernel": kernel,
                "variant": name,
                "reference": name == ref_name,
                "correct": correct,
                "shape": shape,
                "dtype": dtype,
                "hardware": cfg["hardware"],
                "times_ms": [round(t, 6) for t in times[name]],
                "max_abs_diff": max_abs,
                "atol": tol,
                "rtol": tol,
                "warmup": max(cfg["warmup"], 1),
                "timing": "wallclock_block_until_ready",
            }
        )
    return rows



def detect_hardware() -> str:
    """The accelerator type of JAX's first device as Falcon's catalog names it (per chip), else its kind."""
    import jax

    dev = jax.devices()[0]
    if dev.platform == "cpu":
        return "cpu"
    kind = getattr(dev, "device_kind", "") or dev.platform
    # Catalog GPU types are 8-GPU machines; the analysis uses their per-chip peaks.
    known = [("H200", "h200-141gb-8"), ("H100", "h100-80gb-8"), ("A100-SXM4-80GB", "a100-80gb-8"), ("A100 80GB", "a100-80gb-8"),
             ("A100", "a100-40gb-8")]
    for needle, name in known:
        if needle in kind:
            return name
    return kind.lower().replace(" ", "-")

def main(argv: list[str]) -> int:
    try:
        cfg, output = load_config(argv)
    except ConfigError as e:
        print(f"bench.py: {e}", file=sys.stderr)
        return 2

    import jax
    import jax.numpy as jnp
    import numpy as np

    cfg["hardware"] = cfg.get("hardware") or detect_hardware()
    jnp_dtype = {"fp32": jnp.float32, "bf16": jnp.bfloat16}
    key = jax.random.PRNGKey(cfg["seed"])
    rows: list[dict] = []
    started = time.perf_counter()
    for dtype in cfg["dtypes"]:
        dt = jnp_dtype[dtype]
        size = ITEMSIZE[dtype]
        if "matmul" in cfg["kernels"]:
            for m, k, n in cfg["matmul_shapes"]:
                key, ka, kb = jax.random.split(key, 3)
                a = jax.random.normal(ka, (m, k), jnp.float32).astype(dt)
                b = jax.random.normal(kb, (k, n), jnp.float32).astype(dt)
                variants = matmul_variants(jax, jnp, m, k, n, cfg["block_sizes"])
                group = bench_group(np, jax, "matmul", {"m": m, "k": k, "n": n}, dtype, (a, b), variants, cfg)
                for r in group:
                    r["flops"] = 2 * m * k * n
                    r["bytes"] = (m * k + k * n + m * n) * size
                rows += group
        if "attention" in cfg["kernels"]:
            for b, h, s, d in cfg["attention_shapes"]:
                key, kq, kk, kv = jax.random.split(key, 4)
                q, k_, v = (jax.random.normal(x, (b, h, s, d), jnp.float32).astype(dt) for x in (kq, kk, kv))
                variants = attention_variants(jax, jnp, b, h, s, d, cfg["chunk_sizes"])
                group = bench_group(np, jax, "attention", {"b": b, "h": h, "s": s, "d": d}, dtype, (q, k_, v), variants, cfg)
                for r in group:
                    r["flops"] = 4 * b * h * s * s * d
                    r["bytes"] = 4 * b * h * s * d * size
                rows += group

    meta = {"jax": jax.__version__, "device": str(jax.devices()[0]), "python": platform.python_version()}
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    tmp = output + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps({**r, **meta}, separators=(",", ":")) + "\n")
    os.replace(tmp, output)

    for r in rows:
        med = sorted(r["times_ms"])[len(r["times_ms"]) // 2]
        ok = "ok " if r["correct"] else "BAD"
        print(f"{r['kernel']:>9} {r['variant']:<24} {json.dumps(r['shape']):<36} {r['dtype']} {ok} median {med:8.3f} ms")
    print(f"wrote {len(rows)} rows to {output} in {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
