#!/usr/bin/env python3
"""A small decoder-only transformer trained in pure JAX, as a Falcon workload.

Config: defaults, then the JSON snapshot at $FALCON_EXP_CONFIG (or --config PATH), then any CLI flag given
explicitly (e.g. --batch-size 16). Keys: model, layers, d_model, heads, seq_len, batch_size, steps,
learning_rate, remat (none|full|minimal), precision (fp32|bf16), seed, plus vocab_size, mlp_ratio, optimizer
(adam|sgd), parallelism (every axis must be 1: this example runs on one device), leak_bytes_per_step (host
memory kept alive each step, written to so that it is resident: a deliberate leak for Falcon's memory verdict;
0 by default) and profile {enabled, start_step, num_steps}. Unknown keys are kept in the effective config and
otherwise ignored.

Writes, under $FALCON_ARTIFACT_DIR (default ./artifacts):
  metrics.jsonl          one JSON object per step: step, time (the wall clock at the step's end, seconds since
                         the epoch), loss, step_time_s, tokens_per_s, model_flops, tflops_per_device
  config_effective.json  the config actually used, plus derived facts (parameter count, compile time, ...)
  plugins/profile/<run>/<host>.xplane.pb
                         an XProf capture of steps [start_step, start_step + num_steps) when profiling is on
                         ($FALCON_PROFILE_START_STEP / $FALCON_PROFILE_NUM_STEPS, or profile.enabled in the config)

Steps are numbered from 0. Exit status 2 with a message on stderr when the config is unusable.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import socket
import sys
import time
from typing import Any

DEFAULTS: dict[str, Any] = {
    "model": "tiny-decoder",
    "layers": 2,
    "d_model": 128,
    "heads": 4,
    "seq_len": 128,
    "batch_size": 8,
    "steps": 30,
    "learning_rate": 3e-3,
    "remat": "none",
    "precision": "fp32",
    "seed": 0,
    "vocab_size": 256,
    "mlp_ratio": 4,
    "optimizer": "adam",
    "leak_bytes_per_step": 0,
}

REMAT_CHOICES = ("none", "full", "minimal")
PRECISION_ALIASES = {"fp32": "fp32", "float32": "fp32", "f32": "fp32", "bf16": "bf16", "bfloat16": "bf16"}
OPTIMIZERS = ("adam", "sgd")
INT_KEYS = ("layers", "d_model", "heads", "seq_len", "batch_size", "steps", "seed", "vocab_size", "mlp_ratio")
NON_NEGATIVE_KEYS = ("seed", "leak_bytes_per_step")
PARALLELISM_AXES = ("dp", "fsdp", "tp", "pp", "ep", "sp")


class ConfigError(Exception):
    """The config cannot be used; the message says which key and why."""


# --------------------------------------------------------------------------------------------------------------
# Config
# --------------------------------------------------------------------------------------------------------------


def load_snapshot(path: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Reads a config snapshot: either the `config` object itself, or a whole spec holding `config` (and maybe
    `profile`). Returns (config, spec-level profile block or None)."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        raise ConfigError(f"cannot read the config snapshot {path}: {e.strerror}") from e
    except json.JSONDecodeError as e:
        raise ConfigError(f"the config snapshot {path} is not valid JSON: {e}") from e
    if not isinstance(doc, dict):
        raise ConfigError(f"the config snapshot {path} must hold a JSON object, not {type(doc).__name__}")
    if isinstance(doc.get("config"), dict) and ("workload" in doc or "resources" in doc):
        profile = doc.get("profile")
        return dict(doc["config"]), profile if isinstance(profile, dict) else None
    return dict(doc), None


def _int(cfg: dict[str, Any], key: str, minimum: int) -> int:
    value = cfg[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or float(value) != int(value):
        raise ConfigError(f"`{key}` must be an integer, not {json.dumps(value)}")
    value = int(value)
    if value < minimum:
        raise ConfigError(f"`{key}` must be at least {minimum}, not {value}")
    return value


def validate(cfg: dict[str, Any]) -> dict[str, Any]:
    """Checks and normalises a merged config; raises ConfigError naming the first bad key."""
    cfg = dict(cfg)
    if not isinstance(cfg.get("model"), str) or not cfg["model"]:
        raise ConfigError(f"`model` must be a non-empty string, not {json.dumps(cfg.get('model'))}")
    for key in (*INT_KEYS, "leak_bytes_per_step"):
        cfg[key] = _int(cfg, key, 0 if key in NON_NEGATIVE_KEYS else 1)
    if cfg["d_model"] % cfg["heads"]:
        raise ConfigError(f"`d_model` ({cfg['d_model']}) must be divisible by `heads` ({cfg['heads']})")
    lr = cfg["learning_rate"]
    if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not math.isfinite(lr) or lr <= 0:
        raise ConfigError(f"`learning_rate` must be a positive number, not {json.dumps(lr)}")
    cfg["learning_rate"] = float(lr)

    remat = cfg["remat"]
    if isinstance(remat, bool):  # the spec format allows a boolean: true = full, false = none
        remat = "full" if remat else "none"
    if remat not in REMAT_CHOICES:
        raise ConfigError(f"`remat` must be one of {', '.join(REMAT_CHOICES)} (or a boolean), not {json.dumps(remat)}")
    cfg["remat"] = remat

    precision = cfg["precision"]
    if not isinstance(precision, str) or precision.lower() not in PRECISION_ALIASES:
        raise ConfigError(f"`precision` must be fp32 or bf16, not {json.dumps(precision)}")
    cfg["precision"] = PRECISION_ALIASES[precision.lower()]

    if cfg["optimizer"] not in OPTIMIZERS:
        raise ConfigError(f"`optimizer` must be one of {', '.join(OPTIMIZERS)}, not {json.dumps(cfg['optimizer'])}")

    par = cfg.get("parallelism")
    if par is not None:
        if not isinstance(par, dict):
            raise ConfigError(f"`parallelism` must be an object like {{dp: 1, ...}}, not {json.dumps(par)}")
        for axis, n in par.items():
            if axis not in PARALLELISM_AXES:
                raise ConfigError(f"`parallelism.{axis}` is not an axis; the axes are {', '.join(PARALLELISM_AXES)}")
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise ConfigError(f"`parallelism.{axis}` must be a positive integer, not {json.dumps(n)}")
            if n != 1:
                raise ConfigError(f"`parallelism.{axis}` is {n}, but this example runs on one device: every axis must be 1")
    return cfg


def resolve_profile(cfg: dict[str, Any], spec_profile: dict[str, Any] | None, steps: int) -> tuple[int, int] | None:
    """The profiled step range as (start, count), or None. $FALCON_PROFILE_* win over the config's block."""
    env_start = os.environ.get("FALCON_PROFILE_START_STEP")
    env_num = os.environ.get("FALCON_PROFILE_NUM_STEPS")
    if env_start is not None or env_num is not None:
        try:
            start = int(env_start if env_start is not None else 10)
            num = int(env_num if env_num is not None else 5)
        except ValueError as e:
            raise ConfigError(f"FALCON_PROFILE_START_STEP / FALCON_PROFILE_NUM_STEPS must be integers: {e}") from e
        origin = "FALCON_PROFILE_START_STEP/FALCON_PROFILE_NUM_STEPS"
    else:
        block = cfg.get("profile", spec_profile)
        if block is None:
            return None
        if not isinstance(block, dict):
            raise ConfigError(f"`profile` must be an object {{enabled, start_step, num_steps}}, not {json.dumps(block)}")
        if not block.get("enabled", True):  # as in the spec format, a block that does not say `enabled` turns it on
            return None
        start, num = block.get("start_step", 10), block.get("num_steps", 5)
        for key, value in (("start_step", start), ("num_steps", num)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"`profile.{key}` must be an integer, not {json.dumps(value)}")
        origin = "profile"
    if start < 0 or num < 1:
        raise ConfigError(f"{origin}: the profile needs start_step >= 0 and num_steps >= 1, got {start} and {num}")
    if start + num > steps:
        raise ConfigError(
            f"{origin}: profiling steps {start}..{start + num - 1} needs at least {start + num} steps, "
            f"but `steps` is {steps}"
        )
    return start, num


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", help="JSON config snapshot (default: $FALCON_EXP_CONFIG)")
    p.add_argument("--artifact-dir", help="where to write artifacts (default: $FALCON_ARTIFACT_DIR or ./artifacts)")
    p.add_argument("--model")
    for key in INT_KEYS:
        p.add_argument("--" + key.replace("_", "-"), dest=key, type=int)
    p.add_argument("--learning-rate", dest="learning_rate", type=float)
    p.add_argument("--leak-bytes-per-step", dest="leak_bytes_per_step", type=int)
    p.add_argument("--remat", choices=REMAT_CHOICES)
    p.add_argument("--precision", choices=sorted(PRECISION_ALIASES))
    p.add_argument("--optimizer", choices=OPTIMIZERS)
    p.add_argument("--profile-start-step", type=int, help="profile from this step (also enables profiling)")
    p.add_argument("--profile-num-steps", type=int, help="profile this many steps (default 5)")
    return p.parse_args(argv)


def build_config(args: argparse.Namespace, overrides: dict[str, Any] | None = None):
    cfg = dict(DEFAULTS)
    spec_profile = None
    source = "defaults"
    path = args.config or os.environ.get("FALCON_EXP_CONFIG")
    if path:
        snapshot, spec_profile = load_snapshot(path)
        cfg.update(snapshot)
        source = path
    for key in ("model", "learning_rate", "remat", "precision", "optimizer", "leak_bytes_per_step", *INT_KEYS):
        value = getattr(args, key, None)
        if value is not None:
            cfg[key] = value
    if args.profile_start_step is not None or args.profile_num_steps is not None:
        cfg["profile"] = {
            "enabled": True,
            "start_step": args.profile_start_step if args.profile_start_step is not None else 10,
            "num_steps": args.profile_num_steps if args.profile_num_steps is not None else 5,
        }
    if overrides:
        cfg.update(overrides)
    cfg = validate(cfg)
    profile = resolve_profile(cfg, spec_profile, cfg["steps"])
    return cfg, profile, source


# --------------------------------------------------------------------------------------------------------------
# Model
# --------------------------------------------------------------------------------------------------------------


def init_params(key, cfg):
    import jax
    import jax.numpy as jnp

    d, v, t, hidden = cfg["d_model"], cfg["vocab_size"], cfg["seq_len"], cfg["mlp_ratio"] * cfg["d_model"]
    keys = iter(jax.random.split(key, 3 + 4 * cfg["layers"]))

    def dense(shape, fan_in):
        return jax.random.normal(next(keys), shape, jnp.float32) / math.sqrt(fan_in)

    params = {
        "embed": jax.random.normal(next(keys), (v, d), jnp.float32) * 0.02,
        "pos": jax.random.normal(next(keys), (t, d), jnp.float32) * 0.02,
        "layers": [],
        "ln_f": {"scale": jnp.ones((d,)), "bias": jnp.zeros((d,))},
        "unembed": dense((d, v), d),
    }
    for _ in range(cfg["layers"]):
        params["layers"].append(
            {
                "ln1": {"scale": jnp.ones((d,)), "bias": jnp.zeros((d,))},
                "qkv": dense((d, 3 * d), d),
                "proj": dense((d, d), d) / math.sqrt(2 * cfg["layers"]),
                "ln2": {"scale": jnp.ones((d,)), "bias": jnp.zeros((d,))},
                "mlp_in": dense((d, hidden), d),
                "mlp_out": dense((hidden, d), hidden) / math.sqrt(2 * cfg["layers"]),
            }
        )
    return params


def layer_norm(x, p, eps=1e-5):
    import jax.numpy as jnp

    x32 = x.astype(jnp.float32)
    mean = x32.mean(-1, keepdims=True)
    var = ((x32 - mean) ** 2).mean(-1, keepdims=True)
    y = (x32 - mean) * (var + eps) ** -0.5 * p["scale"] + p["bias"]
    return y.astype(x.dtype)


def make_block(cfg, dtype):
    import jax
    import jax.numpy as jnp

    heads = cfg["heads"]
    dh = cfg["d_model"] // heads

    def block(x, p):
        b, t, d = x.shape
        p = jax.tree_util.tree_map(lambda a: a.astype(dtype), p)
        h = layer_norm(x, p["ln1"])
        qkv = jnp.einsum("btd,de->bte", h, p["qkv"])
        q, k, v = jnp.split(qkv, 3, axis=-1)
        q, k, v = (a.reshape(b, t, heads, dh).transpose(0, 2, 1, 3) for a in (q, k, v))
        scores = jnp.einsum("bhqd,bhkd->bhqk", q, k).astype(jnp.float32) / math.sqrt(dh)
        causal = jnp.tril(jnp.ones((t, t), dtype=bool))
        scores = jnp.where(causal, scores, jnp.finfo(jnp.float32).min)
        attn = jax.nn.softmax(scores, axis=-1).astype(dtype)
        out = jnp.einsum("bhqk,bhkd->bhqd", attn, v).transpose(0, 2, 1, 3).reshape(b, t, d)
        x = x + jnp.einsum("btd,de->bte", out, p["proj"])
        h = layer_norm(x, p["ln2"])
        h = jax.nn.gelu(jnp.einsum("btd,df->btf", h, p["mlp_in"]))
        return x + jnp.einsum("btf,fd->btd", h, p["mlp_out"])

    if cfg["remat"] == "full":
        return jax.checkpoint(block)
    if cfg["remat"] == "minimal":
        return jax.checkpoint(block, policy=jax.checkpoint_policies.dots_with_no_batch_dims_saveable)
    return block


def make_loss(cfg):
    import jax
    import jax.numpy as jnp

    dtype = jnp.bfloat16 if cfg["precision"] == "bf16" else jnp.float32
    block = make_block(cfg, dtype)

    def loss_fn(params, tokens):
        inputs, targets = tokens[:, :-1], tokens[:, 1:]
        t = inputs.shape[1]
        x = (params["embed"][inputs] + params["pos"][:t]).astype(dtype)
        for p in params["layers"]:
            x = block(x, p)
        x = layer_norm(x, jax.tree_util.tree_map(lambda a: a.astype(dtype), params["ln_f"]))
        logits = jnp.einsum("btd,dv->btv", x, params["unembed"].astype(dtype)).astype(jnp.float32)
        logp = jax.nn.log_softmax(logits, axis=-1)
        return -jnp.take_along_axis(logp, targets[..., None], axis=-1).mean()

    return loss_fn


def make_train_step(cfg):
    """(params, opt_state, tokens) -> (params, opt_state, loss). Master weights and optimizer state stay fp32."""
    import jax
    import jax.numpy as jnp

    loss_fn = make_loss(cfg)
    lr = cfg["learning_rate"]
    b1, b2, eps = 0.9, 0.95, 1e-8

    def step(params, opt_state, tokens):
        loss, grads = jax.value_and_grad(loss_fn)(params, tokens)
        if cfg["optimizer"] == "sgd":
            params = jax.tree_util.tree_map(lambda w, g: w - lr * g, params, grads)
            return params, opt_state, loss
        count = opt_state["count"] + 1
        mu = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, opt_state["mu"], grads)
        nu = jax.tree_util.tree_map(lambda n, g: b2 * n + (1 - b2) * g * g, opt_state["nu"], grads)
        c1 = 1 - b1 ** count.astype(jnp.float32)
        c2 = 1 - b2 ** count.astype(jnp.float32)
        params = jax.tree_util.tree_map(
            lambda w, m, n: w - lr * (m / c1) / (jnp.sqrt(n / c2) + eps), params, mu, nu
        )
        return params, {"count": count, "mu": mu, "nu": nu}, loss

    return step


def init_opt_state(params, cfg):
    import jax
    import jax.numpy as jnp

    if cfg["optimizer"] == "sgd":
        return {"count": jnp.zeros((), jnp.int32)}
    zeros = lambda: jax.tree_util.tree_map(jnp.zeros_like, params)  # noqa: E731
    return {"count": jnp.zeros((), jnp.int32), "mu": zeros(), "nu": zeros()}


def make_batch_fn(cfg):
    """Synthetic, learnable data: each row is an arithmetic progression mod vocab_size with a random start and a
    random stride from 1..7, so next-token loss falls well below log(vocab_size) as the model learns it."""
    import jax
    import jax.numpy as jnp

    b, t, v = cfg["batch_size"], cfg["seq_len"] + 1, cfg["vocab_size"]

    @jax.jit
    def batch(key):
        k1, k2 = jax.random.split(key)
        start = jax.random.randint(k1, (b, 1), 0, v)
        stride = jax.random.randint(k2, (b, 1), 1, 8)
        return ((start + stride * jnp.arange(t)[None, :]) % v).astype(jnp.int32)

    return batch


def cost_flops(compiled) -> float | None:
    """FLOPs from XLA's cost analysis of a compiled executable; jax returns a dict (newer) or a list of dicts,
    one per program (older)."""
    try:
        analysis = compiled.cost_analysis()
    except Exception as e:  # noqa: BLE001 - some backends do not implement it
        print(f"train.py: warning: cost_analysis() failed: {e}", file=sys.stderr)
        return None
    if analysis is None:
        return None
    if isinstance(analysis, dict):
        analysis = [analysis]
    total = sum(float(a.get("flops", 0.0)) for a in analysis if isinstance(a, dict))
    return total if total > 0 else None


def param_count(params) -> int:
    import jax

    return int(sum(x.size for x in jax.tree_util.tree_leaves(params)))


def analytic_flops(cfg, n_params: int) -> float:
    """The textbook estimate of one training step (6 × matmul params × tokens + attention), for comparison with
    XLA's count; it ignores remat recompute and elementwise work."""
    d, t, b, v = cfg["d_model"], cfg["seq_len"], cfg["batch_size"], cfg["vocab_size"]
    matmul_params = cfg["layers"] * (4 * d * d + 2 * cfg["mlp_ratio"] * d * d) + d * v
    attention = cfg["layers"] * 2 * 2 * t * t * d  # QK^T and AV, forward, per sequence
    return 6.0 * matmul_params * b * t + 3.0 * attention * b


# --------------------------------------------------------------------------------------------------------------
# Run
# --------------------------------------------------------------------------------------------------------------


def write_json(path: str, obj: Any) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


def run(cfg: dict[str, Any], profile: tuple[int, int] | None, artifact_dir: str, source: str = "") -> dict[str, Any]:
    import jax

    os.makedirs(artifact_dir, exist_ok=True)
    t0 = time.perf_counter()
    key = jax.random.PRNGKey(cfg["seed"])
    params = init_params(key, cfg)
    opt_state = init_opt_state(params, cfg)
    n_params = param_count(params)
    batch_fn = make_batch_fn(cfg)
    data_key = jax.random.PRNGKey(cfg["seed"] + 1)

    # Compile ahead of time: the executable that runs is the one whose cost analysis gives model_flops, and no
    # step's time includes compilation.
    jitted = jax.jit(make_train_step(cfg), donate_argnums=(0, 1))
    first = batch_fn(jax.random.fold_in(data_key, 0))
    compiled = jitted.lower(params, opt_state, first).compile()
    compile_s = time.perf_counter() - t0
    flops = cost_flops(compiled)
    tokens = cfg["batch_size"] * cfg["seq_len"]

    effective = dict(cfg)
    effective["profile"] = (
        {"enabled": True, "start_step": profile[0], "num_steps": profile[1]} if profile else {"enabled": False}
    )
    derived = {
        "config_source": source,
        "experiment_id": os.environ.get("FALCON_EXP_ID"),
        "artifact_dir": os.path.abspath(artifact_dir),
        "jax_version": jax.__version__,
        "backend": jax.default_backend(),
        "devices": [str(d) for d in jax.devices()],
        "host": socket.gethostname(),
        "param_count": n_params,
        "tokens_per_step": tokens,
        "model_flops_per_step": flops,
        "analytic_flops_per_step": analytic_flops(cfg, n_params),
        "setup_and_compile_s": round(compile_s, 3),
    }
    effective["_derived"] = derived
    write_json(os.path.join(artifact_dir, "config_effective.json"), effective)
    print(
        f"train.py: {cfg['model']}: {cfg['layers']} layers, d_model {cfg['d_model']}, {n_params:,} params, "
        f"batch {cfg['batch_size']} x seq {cfg['seq_len']}, remat {cfg['remat']}, {cfg['precision']}; "
        f"compiled in {compile_s:.1f}s; {flops or 0:.3e} FLOPs/step; "
        f"profile {'steps %d..%d' % (profile[0], profile[0] + profile[1] - 1) if profile else 'off'}",
        file=sys.stderr,
        flush=True,
    )

    metrics_path = os.path.join(artifact_dir, "metrics.jsonl")
    tracing = False
    losses = []
    leaked = []  # config.leak_bytes_per_step: buffers kept alive on purpose
    with open(metrics_path, "w", encoding="utf-8") as out:
        try:
            for step in range(cfg["steps"]):
                tokens_in = first if step == 0 else batch_fn(jax.random.fold_in(data_key, step))
                tokens_in.block_until_ready()
                if profile and step == profile[0]:
                    jax.profiler.start_trace(artifact_dir)
                    tracing = True
                with jax.profiler.StepTraceAnnotation("train", step_num=step):
                    start = time.perf_counter()
                    params, opt_state, loss = compiled(params, opt_state, tokens_in)
                    jax.block_until_ready((params, opt_state, loss))
                    elapsed = time.perf_counter() - start
                if tracing and step == profile[0] + profile[1] - 1:
                    jax.profiler.stop_trace()
                    tracing = False
                if cfg["leak_bytes_per_step"]:
                    # bytes(n) is calloc'd (pages untouched, not resident); filling it makes every page resident.
                    leaked.append(b"\x01" * cfg["leak_bytes_per_step"])
                loss_value = float(loss)
                if not math.isfinite(loss_value):
                    raise RuntimeError(f"loss is {loss_value} at step {step}; lower learning_rate")
                losses.append(loss_value)
                record = {
                    "step": step,
                    "time": round(time.time(), 3),
                    "loss": loss_value,
                    "step_time_s": elapsed,
                    "tokens_per_s": tokens / elapsed,
                }
                if flops is not None:
                    record["model_flops"] = flops
                    record["tflops_per_device"] = flops / elapsed / 1e12
                out.write(json.dumps(record) + "\n")
                out.flush()
                if step % 10 == 0 or step == cfg["steps"] - 1:
                    print(f"step {step}: loss {loss_value:.4f}, {elapsed * 1e3:.1f} ms", file=sys.stderr, flush=True)
        finally:
            if tracing:
                jax.profiler.stop_trace()
    return {"losses": losses, "model_flops": flops, "compile_s": compile_s}


def main(argv: list[str] | None = None, overrides: dict[str, Any] | None = None) -> int:
    args = parse_args(argv)
    try:
        cfg, profile, source = build_config(args, overrides)
    except ConfigError as e:
        print(f"train.py: error: bad config: {e}", file=sys.stderr)
        return 2
    artifact_dir = args.artifact_dir or os.environ.get("FALCON_ARTIFACT_DIR") or "artifacts"
    run(cfg, profile, artifact_dir, source)
    return 0


if __name__ == "__main__":
    sys.exit(main())
