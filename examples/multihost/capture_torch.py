"""Makes a multi-rank PyTorch capture on one machine: N ranks of `torch_ddp.py` (DDP on CPU over gloo), one of them
optionally starting each step late, each profiled; their chrome traces gathered as one run of N ranks:

    python capture_torch.py OUT --ranks 4 [--late 2 --delay-ms 30] [--width 256] [--steps 10]

writes OUT/rank-<i>.pt.trace.json.gz (one trace per rank, gzipped with no name or time in the header, so the same
trace gives the same bytes) and OUT/truth.jsonl (each rank's own clock of when it entered each profiled step). Run
it with the PyTorch venv (`bash examples/multihost/setup_torch.sh` prints its python). `make_fixtures.sh` makes the
runs the tests keep.
"""

import gzip
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import launch  # noqa: E402  (beside this script)


def main():
    a = launch.parser("--ranks", "DDP ranks").parse_args()
    work = launch.work_folder(a.out, "falcon-multihost-torch-")
    port = launch.free_port()
    commands = []
    for i in range(a.ranks):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(i),
                   WORLD_SIZE=str(a.ranks), LOCAL_RANK=str(i), OMP_NUM_THREADS="1")
        # Run in the work folder and name it ".": the trace records the path it was written to (traceName).
        cmd = [sys.executable, os.path.join(HERE, "torch_ddp.py"), ".", "--late", str(a.late),
               "--delay-ms", str(a.delay_ms), "--width", str(a.width), "--steps", str(a.steps)]
        commands.append((cmd, env, work, f"r{i}.log"))
    launch.run_all(commands, work, "rank")
    os.makedirs(a.out)
    with open(os.path.join(a.out, "truth.jsonl"), "w") as truth:
        for i in range(a.ranks):
            src = os.path.join(work, f"rank-{i}.pt.trace.json")
            with open(src, "rb") as f:
                data = f.read()
            info = json.loads(data).get("distributedInfo")
            if not info or info.get("rank") != i or info.get("world_size") != a.ranks:
                sys.exit(f"rank {i}: the trace's distributedInfo is {info!r}")
            with open(os.path.join(a.out, f"rank-{i}.pt.trace.json.gz"), "wb") as f:
                with gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=0, compresslevel=9) as z:
                    z.write(data)
            truth.write(open(os.path.join(work, f"truth-r{i}.jsonl")).read())
    shutil.rmtree(work)
    print(a.out)


if __name__ == "__main__":
    main()
