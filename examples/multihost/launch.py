"""What capture.py (JAX) and capture_torch.py (PyTorch) share: their common arguments, a free port for the run's
rendezvous, and starting N processes that must all succeed (each one's log kept in the work folder)."""

import argparse
import os
import socket
import subprocess
import sys
import tempfile


def parser(count_flag, count_help):
    """The arguments of a capture: OUT, how many processes (`--processes` / `--ranks`), the late one and its delay,
    the model's width and the profiled steps."""
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument(count_flag, type=int, default=4, help=count_help)
    ap.add_argument("--late", type=int, default=-1, help="the process that starts each step late")
    ap.add_argument("--delay-ms", type=float, default=0.0)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--steps", type=int, default=10)
    return ap


def work_folder(out, prefix):
    """A new work folder, after checking that OUT does not exist yet."""
    if os.path.exists(out):
        sys.exit(f"{out} exists: give a new folder")
    return tempfile.mkdtemp(prefix=prefix)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_all(commands, work, what):
    """Starts every (cmd, env, cwd, log name) at once and waits; exits with the failed ones' logs if any failed."""
    procs, logs = [], []
    for cmd, env, cwd, log in commands:
        logs.append(os.path.join(work, log))
        procs.append(subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=open(logs[-1], "w")))
    codes = [p.wait(timeout=600) for p in procs]
    if any(codes):
        for log in logs:
            sys.stderr.write(open(log).read()[-2000:])
        sys.exit(f"a {what} failed: exit codes {codes} (logs in {work})")
