"""One process of a data-parallel JAX run on CPU (gloo collectives), profiled: a small MLP whose gradients are
all-reduced across the processes every step, with an optional delay before each step on one process (a slow input
pipeline). `capture.py` starts N of these and gathers their captures into one run folder.

    python jax_dp.py PROCESS_ID NUM_PROCESSES PORT OUT_DIR [--late ID --delay-ms MS] [--width W] [--steps S]

Each process writes its capture under OUT_DIR/p<ID>/ (jax.profiler) and `truth-p<ID>.jsonl`: for every profiled
step, when this process entered the step's collective (its wall clock, in ns) — the workload's own account, kept
beside the capture.
"""

import argparse
import json
import os
import time

import numpy as np

import jax

jax.config.update("jax_cpu_collectives_implementation", "gloo")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pid", type=int)
    ap.add_argument("n", type=int)
    ap.add_argument("port", type=int)
    ap.add_argument("out")
    ap.add_argument("--late", type=int, default=-1, help="the process that starts each step late")
    ap.add_argument("--delay-ms", type=float, default=0.0)
    ap.add_argument("--width", type=int, default=256, help="hidden width: the gradients are about 3 x width^2 floats")
    ap.add_argument("--steps", type=int, default=10, help="profiled steps")
    ap.add_argument("--warmup", type=int, default=5)
    a = ap.parse_args()

    jax.distributed.initialize(f"127.0.0.1:{a.port}", a.n, a.pid)
    import jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    mesh = Mesh(np.array(jax.devices()), ("data",))
    replicated = NamedSharding(mesh, P())
    sharded = NamedSharding(mesh, P("data"))
    w = a.width
    rng = np.random.default_rng(0)
    params = {
        "w1": rng.normal(0, 0.02, (w, w)).astype(np.float32),
        "w2": rng.normal(0, 0.02, (w, w)).astype(np.float32),
        "w3": rng.normal(0, 0.02, (w, w)).astype(np.float32),
    }
    params = jax.tree.map(lambda p: jax.device_put(p, replicated), params)
    local = np.random.default_rng(1 + a.pid).normal(size=(32, w)).astype(np.float32)
    batch = jax.make_array_from_process_local_data(sharded, local)

    def loss(p, x):
        h = jnp.tanh(x @ p["w1"])
        h = jnp.tanh(h @ p["w2"])
        return jnp.mean((h @ p["w3"]) ** 2)

    @jax.jit
    def step(p, x):
        # The batch is sharded over the processes and the parameters replicated: XLA all-reduces the gradients.
        g = jax.grad(loss)(p, x)
        return jax.tree.map(lambda q, d: q - 0.01 * d, p, g)

    def one(p):
        if a.pid == a.late and a.delay_ms > 0:
            time.sleep(a.delay_ms / 1000)
        entered = time.time_ns()
        p = step(p, batch)
        jax.block_until_ready(p)
        return p, entered

    for _ in range(a.warmup):
        params, _ = one(params)
    trace_dir = os.path.join(a.out, f"p{a.pid}")
    truth = []
    jax.profiler.start_trace(trace_dir)
    for i in range(a.steps):
        with jax.profiler.StepTraceAnnotation("train", step_num=i):
            params, entered = one(params)
        truth.append({"step": i, "process": a.pid, "entered_ns": entered})
    jax.profiler.stop_trace()
    with open(os.path.join(a.out, f"truth-p{a.pid}.jsonl"), "w") as f:
        for t in truth:
            f.write(json.dumps(t) + "\n")
    jax.distributed.shutdown()


if __name__ == "__main__":
    main()
