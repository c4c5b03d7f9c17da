"""One rank of a PyTorch DistributedDataParallel run on CPU over gloo, profiled: a small MLP whose gradients DDP
all-reduces across the ranks every step, with an optional delay before each step on one rank (a slow input
pipeline). `capture_torch.py` starts N of these and gathers their traces into one run folder.

    MASTER_ADDR=127.0.0.1 MASTER_PORT=PORT RANK=R WORLD_SIZE=N python torch_ddp.py OUT_DIR \
        [--late RANK --delay-ms MS] [--width W] [--steps S]

(torchrun sets those variables too.) Each rank runs --warmup steps unprofiled, then one profiler warm-up step and
--steps profiled steps, each a `ProfilerStep#N` (N = 1..S), and writes OUT_DIR/rank-<R>.pt.trace.json (its chrome
trace) and OUT_DIR/truth-r<R>.jsonl: for every profiled step N, when this rank entered the step's work after its
delay (its wall clock, in ns) — the workload's own account, kept beside the trace.
"""

import argparse
import json
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--late", type=int, default=-1, help="the rank that starts each step late")
    ap.add_argument("--delay-ms", type=float, default=0.0)
    ap.add_argument("--width", type=int, default=256, help="hidden width: the gradients are 3 x width^2 floats")
    ap.add_argument("--steps", type=int, default=10, help="profiled steps")
    ap.add_argument("--warmup", type=int, default=5, help="unprofiled steps first")
    a = ap.parse_args()

    # Several ranks share few cores: one intra-op thread each keeps the compute small and steady.
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    w = a.width
    model = torch.nn.Sequential(
        torch.nn.Linear(w, w, bias=False), torch.nn.Tanh(),
        torch.nn.Linear(w, w, bias=False), torch.nn.Tanh(),
        torch.nn.Linear(w, w, bias=False),
    )
    # The gradients (3 x w^2 floats, 0.75 MiB at w=256) fit DDP's default 25 MiB bucket: one all-reduce a step.
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    x = torch.randn(32, w, generator=torch.Generator().manual_seed(1 + rank))

    def one():
        if rank == a.late and a.delay_ms > 0:
            time.sleep(a.delay_ms / 1000)
        entered = time.time_ns()
        opt.zero_grad(set_to_none=True)
        loss = (ddp(x) ** 2).mean()
        loss.backward()  # DDP all-reduces the gradients here and waits for the result
        opt.step()
        return entered

    for _ in range(a.warmup):
        one()
    dist.barrier()
    os.makedirs(a.out, exist_ok=True)
    trace = os.path.join(a.out, f"rank-{rank}.pt.trace.json")
    truth = []
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU],
        record_shapes=True,
        with_stack=False,
        schedule=torch.profiler.schedule(wait=0, warmup=1, active=a.steps, repeat=1),
        on_trace_ready=lambda p: p.export_chrome_trace(trace),
    ) as prof:
        for n in range(1 + a.steps):  # step 0 is the profiler's warm-up, not kept
            entered = one()
            if n > 0:
                truth.append({"step": n, "rank": rank, "entered_ns": entered})
            prof.step()
    with open(os.path.join(a.out, f"truth-r{rank}.jsonl"), "w") as f:
        for t in truth:
            f.write(json.dumps(t) + "\n")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
