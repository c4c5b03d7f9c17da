#!/usr/bin/env bash
# Falcon's main job on the embedded defaults (SQLite, local artifact dir, local job runner):
# builds `falcon`, writes ./falcon.toml if there is none, checks the setup, installs the example workload's
# Python environment (JAX on CPU, under .cache/), runs a baseline and a variant of a small JAX transformer as
# experiments (metrics, an XProf profile and logs land in the artifact store), compares their step time and
# throughput run by run (one run a side decides the step time; the throughput verdict says what would decide it),
# analyses the variant's profile and compares the two profiles (terminal tables and an HTML report).
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
# them, and this demo's own configuration then runs workloads as root, and says so (README, "Workload isolation").
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
"$FALCON" doctor

echo "quickstart: preparing the example workload's Python environment" >&2
bash examples/jax_transformer/setup.sh >&2

submit() {
    "$FALCON" exp submit "$1" --wait --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])'
}
echo "quickstart: running the baseline (examples/jax_transformer/baseline.yaml)" >&2
A=$(submit examples/jax_transformer/baseline.yaml)
echo "quickstart: running the variant (examples/jax_transformer/variant.yaml)" >&2
B=$(submit examples/jax_transformer/variant.yaml)

"$FALCON" exp show "$B"                    # with its goodput: of the time it held the CPU, how much trained
"$FALCON" goodput                          # both runs: chip-seconds by cause, summed
"$FALCON" exp diff "$A" "$B"
# Batch 8 → 16 asks whether throughput improves: a doubled batch's step time is longer by design.
# Run-level verdicts with one run a side: the step time doubles with the batch (decided even so); the throughput
# moves a few percent at most, which one run a side cannot decide: its verdict names the runs that would.
echo "quickstart: step_time_s is the workload's own wall clock per step (a logged metric); the profile's step time \
(exp show, profile analyze) is between the capture's host step markers, with the device's own beside it on GPU" >&2
"$FALCON" exp compare "$A" "$B" --metric step_time_s
"$FALCON" exp compare "$A" "$B" --metric tokens_per_s
echo "quickstart: one run a side decides only changes far beyond run-to-run noise (about ±33 %); for the throughput, \
run the repeats the verdict names (examples/jax_transformer/repeats.yaml repeats the baseline) and compare again" >&2
"$FALCON" profile analyze "$B" --tool overview,ops --top 8
"$FALCON" profile compare "$A" "$B" --top 5
mkdir -p .falcon/reports
"$FALCON" profile compare "$A" "$B" --format html -o ".falcon/reports/compare-$A-$B.html" --force
