#!/usr/bin/env bash
# A run of many hosts analysed in one process and fanned out to cluster jobs: `falcon profile analyze RUN --json`
# against `--fan-out K` for each K, on the local backend (jobs are child processes, at most one per core) and, with
# FALCON_TEST_SLURM_CONF / FALCON_TEST_SLURM_PARTITION set (`scripts/services.sh up && source .cache/services.env`),
# on the Slurm test cluster. Each row: wall time of the whole command (submission, jobs, merge), the largest peak
# RSS of the command or any job (`/usr/bin/time -f %M` counts waited-for descendants), and whether its `--json`
# is byte-identical to the single-process one. A fresh data dir per row.
#
#   bash bench/xprof/fan_out.sh [FILE.xplane.pb] [HOSTS] [K ...]   # default: the TPU fixture, 64 hosts, K = 2 8
#
# Build target/release/falcon first (cargo build --release -p falcon-cli).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
capture="${1:-crates/falcon-xplane/tests/data/tpu_v6e_inference.xplane.pb}"
hosts="${2:-64}"
shift 2 2>/dev/null || shift $# || true
ks=("$@")
((${#ks[@]})) || ks=(2 8)
falcon="${FALCON:-$ROOT/target/release/falcon}"
[[ -x "$falcon" ]] || { echo "build it first: cargo build --release -p falcon-cli" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
[[ -f "$capture" ]] || { echo "no capture at $capture" >&2; exit 1; }

work="$ROOT/.cache/xprof-fan-out"
run="$work/run/plugins/profile/2026_01_01_00_00_00"
rm -rf "$work"
mkdir -p "$run"
for ((i = 0; i < hosts; i++)); do cp "$capture" "$(printf '%s/host-%03d.xplane.pb' "$run" "$i")"; done
mb=$(du -sm "$work/run" | cut -f1)

# One row: label, config text ("" for the defaults), extra arguments.
row() {
    local label="$1" config="$2"
    shift 2
    local dir
    dir="$(mktemp -d "$work/row.XXXX")"
    chmod 755 "$dir"
    [[ -z "$config" ]] || printf '%s' "$config" >"$dir/falcon.toml"
    (cd "$dir" && "$falcon" init --keep >/dev/null 2>&1 || "$falcon" init >/dev/null)
    local start end peak
    start=$(date +%s%N)
    peak=$( { (cd "$dir" && /usr/bin/time -f %M "$falcon" --json profile analyze "$work/run" "$@" >"$dir/out.json" 2>"$dir/err"; tail -1 "$dir/err" >&2); } 2>&1 | tail -1)
    end=$(date +%s%N)
    local same="—"
    [[ ! -f "$work/single.json" ]] || { cmp -s "$work/single.json" "$dir/out.json" && same="yes" || same="NO"; }
    [[ -f "$work/single.json" ]] || { cp "$dir/out.json" "$work/single.json"; one_ns=$((end - start)); one_kib=$peak; }
    printf '| %s | %d | %d | %.2f | %.0f | %.2f | %.2f | %s |\n' "$label" "$hosts" "$mb" \
        "$(echo "($end - $start) / 1000000000" | bc -l)" "$(echo "$peak / 1024" | bc -l)" \
        "$(echo "($end - $start) / $one_ns" | bc -l)" "$(echo "$peak / $one_kib" | bc -l)" "$same"
}

printf '| run | hosts | input (MB) | wall (s) | peak RSS (MiB) | wall ÷ one process | RSS ÷ one process | --json identical |\n'
printf '|---|---:|---:|---:|---:|---:|---:|---|\n'
row "one process" ""
for k in "${ks[@]}"; do row "--fan-out $k, local backend ($(nproc) cores)" "" --fan-out "$k"; done
if [[ -n "${FALCON_TEST_SLURM_CONF:-}" ]]; then
    slurm=$(printf '[[pools]]\nname = "slurm"\nbackend = "slurm"\nzone = "local"\nplatform = "cpu"\naccelerators = ["cpu"]\ncapacity = %s\n\n[pools.settings]\nslurm_conf = "%s"\npartition = "%s"\n' \
        "$(nproc)" "$FALCON_TEST_SLURM_CONF" "$FALCON_TEST_SLURM_PARTITION")
    for k in "${ks[@]}"; do row "--fan-out $k, Slurm test cluster" "$slurm" --fan-out "$k" --timeout 30m; done
fi
