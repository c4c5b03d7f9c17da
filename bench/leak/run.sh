#!/usr/bin/env bash
# The memory verdict on the example JAX workload, as a new user runs it: examples/jax_transformer/leak_sweep.yaml
# runs the example for 120 steps twice — not leaking, and keeping 4 MiB of host memory alive each step
# (config.leak_bytes_per_step) — while Falcon samples each job's RSS on its own; `exp show --json` must call no
# leak on the clean run and a leak on the leaking one. Prints each verdict; exits 1 when either is wrong. Runs in a scratch project (its own
# falcon.toml, SQLite and artifacts) so it never touches ./falcon.toml.
#
#   bash bench/leak/run.sh            # FALCON=path/to/falcon to use another binary (.ci/run uses the debug one)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
# shellcheck source=bench/scratch-project.sh
source "$ROOT/bench/scratch-project.sh"   # FALCON, the example venv, WORK and `f`
start=$SECONDS
f session submit examples/jax_transformer/leak_sweep.yaml --wait --json >"$WORK/session.json"
echo "leak: 2 runs of 120 steps took $((SECONDS - start)) s" >&2
python3 - "$WORK/session.json" "$FALCON" "$WORK/falcon.toml" <<'PY'
import json, subprocess, sys
session = json.load(open(sys.argv[1]))
falcon, config = sys.argv[2], sys.argv[3]
wrong = 0
for e in session["experiments"]:
    shown = json.loads(subprocess.run([falcon, "--config", config, "exp", "show", e["id"], "--json"],
                                      check=True, capture_output=True, text=True).stdout)
    leak = shown["spec"]["config"]["leak_bytes_per_step"]
    m = shown["memory"] or {}
    expected = leak > 0
    ok = shown["status"] == "COMPLETED" and m.get("leak_suspected") is expected and m.get("per") == "step"
    wrong += not ok
    g = m.get("growth_bytes_per_step")
    growth = "none" if g is None else f"{g / 2**20:.3f} MiB/step"
    peak = (m.get("peak_bytes") or 0) / 2**20
    print(f"{e['id']} leak_bytes_per_step={leak}: {shown['status']}, memory.source={m.get('source')} "
          f"per={m.get('per')} growth={growth} ci={[round(c / 2**20, 3) for c in m.get('ci') or []]} MiB "
          f"peak={peak:.1f} MiB leak_suspected={m.get('leak_suspected')} (expected {expected}) "
          f"{'OK' if ok else 'WRONG'}")
    print(f"  {m.get('reason')}")
sys.exit(1 if wrong else 0)
PY
