"""Makes a multi-host capture on one machine: N processes of `jax_dp.py` (JAX on CPU, gloo collectives), one of
them optionally starting each step late, each profiled; their captures gathered as one run of N hosts:

    python capture.py OUT --processes 4 [--late 2 --delay-ms 30] [--width 256] [--steps 10]

writes OUT/plugins/profile/<run>/host-<i>.xplane.pb (one file per process, named after it: every process of this
machine has the same hostname) and OUT/truth.jsonl (each process's own clock of when it entered each step). Run it
with the example's venv (`bash examples/jax_transformer/setup.sh` prints its python). `make_fixtures.sh` makes the
runs the tests keep.
"""

import glob
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import launch  # noqa: E402  (beside this script)


def main():
    ap = launch.parser("--processes", "JAX processes (hosts)")
    ap.add_argument("--run", default="2026_12_01_00_00_00", help="the run folder's name (a fixed one keeps fixtures stable)")
    a = ap.parse_args()
    work = launch.work_folder(a.out, "falcon-multihost-")
    port = launch.free_port()
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=1", JAX_PLATFORMS="cpu")
    commands = []
    for i in range(a.processes):
        cmd = [sys.executable, os.path.join(HERE, "jax_dp.py"), str(i), str(a.processes), str(port), work,
               "--late", str(a.late), "--delay-ms", str(a.delay_ms), "--width", str(a.width), "--steps", str(a.steps)]
        commands.append((cmd, env, None, f"p{i}.log"))
    launch.run_all(commands, work, "process")
    run = os.path.join(a.out, "plugins", "profile", a.run)
    os.makedirs(run)
    with open(os.path.join(a.out, "truth.jsonl"), "w") as truth:
        for i in range(a.processes):
            found = glob.glob(os.path.join(work, f"p{i}", "plugins", "profile", "*", "*.xplane.pb"))
            if len(found) != 1:
                sys.exit(f"process {i}: {len(found)} captures in {work}/p{i}")
            shutil.copy(found[0], os.path.join(run, f"host-{i}.xplane.pb"))
            truth.write(open(os.path.join(work, f"truth-p{i}.jsonl")).read())
    shutil.rmtree(work)
    print(run)


if __name__ == "__main__":
    main()
