"""A workload with a known goodput (issue 37's ground truth), in plain Python (no packages).

It sleeps START_S before its first step (start-up), its first step takes COMPILE_S ("compilation"), the others STEP_S,
every 10th step INPUT_S more (an input stall), a checkpoint every 20 steps takes CHECKPOINT_S (logged as an `event`
line); on its first attempt it exits KILL_CODE after step KILL_AT (a transient failure the spec lists in
`retry_on_exit_codes`), and the retry resumes after its last checkpoint. It appends Falcon's metrics lines (`step`,
`time`, `step_time_s`, and `stall_s`: how long its input stall really took) to $FALCON_ARTIFACT_DIR/metrics.jsonl.
The checkpoint outlives the attempt (each attempt gets its own artifact folder): it is kept beside the experiment's
config, or in $GOODPUT_STATE_DIR.
"""

import json
import os
import sys
import time


def env(name, default):
    return float(os.environ.get(name, default))


def process_start():
    """When this process started (Linux: /proc, to the clock tick: its age subtracted from now), else now."""
    try:
        with open("/proc/self/stat") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        now = time.time()
        return now - (uptime - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return time.time()


def shared(path):
    """Opens the state to the next attempt: it outlives this one, and under Falcon's workload isolation a retry may
    run as another user (each attempt gets a user id of its own)."""
    try:
        os.chmod(path, 0o777 if os.path.isdir(path) else 0o666)
    except OSError:
        pass  # made by an earlier attempt, which opened it already


def main():
    started = process_start()
    start_s, compile_s, step_s = env("START_S", 5), env("COMPILE_S", 3), env("STEP_S", 0.1)
    input_s, checkpoint_s = env("INPUT_S", 0.04), env("CHECKPOINT_S", 1)
    steps, kill_at, kill_code = int(env("STEPS", 50)), int(env("KILL_AT", 30)), int(env("KILL_CODE", 75))
    out = os.environ["FALCON_ARTIFACT_DIR"]
    state = os.environ.get("GOODPUT_STATE_DIR") or os.path.join(
        os.path.dirname(os.environ["FALCON_EXP_CONFIG"]), "goodput-state"
    )
    os.makedirs(out, exist_ok=True)
    os.makedirs(state, exist_ok=True)
    shared(state)
    checkpoint = os.path.join(state, "checkpoint")
    killed = os.path.join(state, "killed")
    # Each attempt's start, for a test to check the start-up Falcon measures against the workload's own; beside it,
    # when the backend stamped when it launched the command (Slurm's batch script, in $FALCON_JOB_DIR/started, in
    # nanoseconds), that stamp: the launch between the two is start-up the chips held too.
    launched = ""
    try:
        with open(os.path.join(os.environ["FALCON_JOB_DIR"], "started")) as f:
            launched = f" {int(f.read().strip()) / 1e9}"
    except (KeyError, OSError, ValueError):
        pass
    with open(os.path.join(state, "starts"), "a") as f:
        f.write(f"{started}{launched}\n")
    shared(os.path.join(state, "starts"))
    step = 1
    if os.path.exists(checkpoint):
        with open(checkpoint) as f:
            step = int(f.read().strip()) + 1
    with open(os.path.join(out, "metrics.jsonl"), "a", buffering=1) as metrics:
        def line(**fields):
            metrics.write(json.dumps(fields) + "\n")

        time.sleep(start_s)
        first = True
        while step <= steps:
            t0 = time.time()
            time.sleep(compile_s if first else step_s)
            first = False
            stall = 0.0
            if step % 10 == 0:
                s0 = time.time()
                time.sleep(input_s)
                stall = time.time() - s0
            t1 = time.time()
            line(step=step, time=t1, step_time_s=t1 - t0, stall_s=stall)
            if step % 20 == 0:
                time.sleep(checkpoint_s)
                with open(checkpoint + ".tmp", "w") as f:
                    f.write(str(step))
                shared(checkpoint + ".tmp")
                os.replace(checkpoint + ".tmp", checkpoint)
                t2 = time.time()
                line(step=step, time=t2, event="checkpoint", event_s=t2 - t1)
            if step == kill_at and not os.path.exists(killed):
                open(killed, "w").close()
                shared(killed)
                print(f"goodput workload: exiting {kill_code} after step {step} (a transient failure)", file=sys.stderr)
                metrics.flush()
                sys.exit(kill_code)
            step += 1


if __name__ == "__main__":
    main()
