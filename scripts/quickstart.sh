#!/usr/bin/env bash
# Falcon's main job on the embedded defaults (SQLite, local artifact dir, local job runner):
# builds `falcon`, writes ./falcon.toml if there is none, checks the setup, installs the example workload's
# Python environment (JAX on CPU, under .cache/), runs a baseline and a variant of a small JAX transformer as
# experiments (metrics, an XProf profile and logs land in the artifact store), compares their step time and
# throughput run by run (one run a side decides the step time; the throughput verdict says what would decide it),
# and shows what the variant's step costs (FLOPs from the capture's HLO, MFU and bound-by against this CPU's peak,
# measured once by `falcon doctor --calibrate`); the full reports are kept under .falcon/reports/, each one command
# away.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

# The release build: the binary docs/PERFORMANCE.md measures (a debug build analyses profiles ~10x slower).
echo "quickstart: building falcon in release mode (the first build takes 10–13 minutes on 2 cores)" >&2
cargo build --quiet --release --locked -p falcon-cli
FALCON="$ROOT/target/release/falcon"

# Only `init` creates a database (any other command refuses a missing one, so a mistyped --db creates
# nothing): `--keep` writes ./falcon.toml when there is none, keeps an existing one, and creates the database
# and artifact directory it names when they are missing.
if [[ -f falcon.toml ]]; then
    echo "quickstart: ./falcon.toml exists; keeping it" >&2
fi
fresh=0
[[ -f falcon.toml ]] || fresh=1
"$FALCON" init --keep
# As root, jobs run as users of their own, which must be able to read this checkout (the example's code): a private
# checkout is opened to them; one under a folder only its owner may enter (/root, mode 0700) cannot be reached by
# them, and this demo's own configuration then runs workloads as root, and says so (docs/guide/jobs.md, "Workload
# isolation").
# shellcheck source=lib/job-users.sh
source "$ROOT/scripts/lib/job-users.sh"
if ! job_users_can_read "$ROOT" quickstart; then
    if [[ $fresh -eq 1 ]]; then
        echo "quickstart: other users cannot enter $ROOT, so the example's jobs cannot run as users of their own; \
this quickstart's falcon.toml turns workload isolation off (clone Falcon where others may enter, e.g. under /opt, to \
keep it)" >&2
        printf '\n# quickstart: the checkout is under a folder other users cannot enter\n[jobs]\nisolation = "none"\n' \
            >>falcon.toml
    else
        echo "quickstart: warning: other users cannot enter $ROOT: the example's jobs will fail unless your \
falcon.toml sets [jobs] isolation = \"none\"" >&2
    fi
fi
# The checks, quietly (shown when one fails); this machine's CPU peak is measured once (an f32 matmul and a memory
# copy on every core, about a second) and kept for the local pool: the CPU roofline, bound-by and MFU divide by it.
REPORTS=.falcon/reports
mkdir -p "$REPORTS"
if ! "$FALCON" doctor >"$REPORTS/doctor.txt"; then
    cat "$REPORTS/doctor.txt"
    exit 1
fi
calibration() {
    "$FALCON" doctor --json | python3 -c 'import json, sys
print(next((c["detail"] for c in json.load(sys.stdin)["checks"] if c["component"] == "calibration"), ""))'
}
if [[ "$(calibration)" == *"not measured"* ]]; then
    "$FALCON" doctor --calibrate >"$REPORTS/doctor.txt"
fi
echo "quickstart: this machine's CPU peak: $(calibration)" >&2

echo "quickstart: preparing the example workload's Python environment" >&2
bash examples/jax_transformer/setup.sh >&2

submit() {
    "$FALCON" exp submit "$1" --wait --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])'
}
echo "quickstart: running the baseline (examples/jax_transformer/baseline.yaml)" >&2
A=$(submit examples/jax_transformer/baseline.yaml)
echo "quickstart: running the variant (examples/jax_transformer/variant.yaml)" >&2
B=$(submit examples/jax_transformer/variant.yaml)

# The full reports, kept as files: each is also one command away.
"$FALCON" exp show "$B" >"$REPORTS/exp-show-$B.txt"
"$FALCON" exp diff "$A" "$B" >"$REPORTS/exp-diff-$A-$B.txt"
"$FALCON" goodput >"$REPORTS/goodput.txt"
"$FALCON" profile analyze "$B" >"$REPORTS/profile-$B.txt" 2>/dev/null
"$FALCON" profile compare "$A" "$B" >"$REPORTS/compare-$A-$B.txt" 2>/dev/null
"$FALCON" profile compare "$A" "$B" --format html -o "$REPORTS/compare-$A-$B.html" --force 2>/dev/null

# What a newcomer reads: the verdicts, then the variant's step as its profile costs it.
echo
echo "== $A: examples/jax_transformer/baseline.yaml (batch 8) vs $B: variant.yaml (batch 16), one run a side =="
echo
echo "-- Did the step time change? (step_time_s: the workload's own clock a step)"
"$FALCON" exp compare "$A" "$B" --metric step_time_s
echo
echo "-- Did the throughput change? (tokens_per_s; one run a side decides only changes far beyond run-to-run noise)"
"$FALCON" exp compare "$A" "$B" --metric tokens_per_s
echo
echo "-- What does the variant's step cost? (its XProf capture: FLOPs from the capture's own HLO, against this CPU's \
measured peak)"
"$FALCON" profile analyze "$B" --tool overview 2>/dev/null
echo
echo "-- The full reports (each one command away):"
echo "   falcon exp show $B              the run: metrics, goodput, code     $REPORTS/exp-show-$B.txt"
echo "   falcon exp diff $A $B          what changed in the config          $REPORTS/exp-diff-$A-$B.txt"
echo "   falcon profile analyze $B       ops, roofline, steps, memory        $REPORTS/profile-$B.txt"
echo "   falcon profile compare $A $B   op by op, what got slower           $REPORTS/compare-$A-$B.html"
echo "   falcon goodput                  where the CPU-seconds went          $REPORTS/goodput.txt"
echo "   falcon serve                    the same in a browser (the dashboard)"
echo "   examples/jax_transformer/repeats.yaml repeats the baseline: the runs the throughput verdict asks for"
