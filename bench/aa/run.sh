#!/usr/bin/env bash
# A/A on real runs: the example JAX workload (examples/jax_transformer/baseline.yaml) run N times at one config
# (a session with `--repeats N`, default 6), then every pair of runs compared with `exp compare` on step time and
# throughput. Prints one line per pair and a summary; exits 1 when any pair is called improved or regressed.
# Runs in a scratch project (its own falcon.toml, SQLite and artifacts) so it never touches ./falcon.toml.
#
#   bash bench/aa/run.sh [N]          # FALCON=path/to/falcon to use another binary
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
N="${1:-6}"
# shellcheck source=bench/scratch-project.sh
source "$ROOT/bench/scratch-project.sh"   # FALCON, the example venv, WORK and `f`
echo "aa: running the baseline $N times" >&2
start=$SECONDS
f session submit examples/jax_transformer/repeats.yaml --repeats "$N" --wait --json >"$WORK/session.json"
echo "aa: $N runs took $((SECONDS - start)) s" >&2
mapfile -t IDS < <(python3 -c 'import json,sys; [print(e["id"]) for e in json.load(open(sys.argv[1]))["experiments"] if e["status"] == "COMPLETED"]' "$WORK/session.json")
((${#IDS[@]} == N)) || { echo "aa: only ${#IDS[@]} of $N runs completed" >&2; exit 1; }
changes=0 pairs=0
for metric in step_time_s tokens_per_s; do
    for ((i = 0; i < N; i++)); do
        for ((j = i + 1; j < N; j++)); do
            out="$(f exp compare "${IDS[$i]}" "${IDS[$j]}" --metric "$metric" --json)"
            line="$(python3 "$ROOT/bench/aa/verdict_line.py" "$metric" "${IDS[$i]}" "${IDS[$j]}" <<<"$out")"
            echo "$line"
            pairs=$((pairs + 1))
            case "$line" in improved*|regressed*) changes=$((changes + 1)) ;; esac
        done
    done
done
echo "aa: $changes of $pairs A/A pairs called improved or regressed"
HASH="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["experiments"][0]["config_hash"][:12])' "$WORK/session.json")"
f exp history --config-hash "$HASH" --metric step_time_s
f exp compare "${IDS[0]},${IDS[1]},${IDS[2]}" "${IDS[3]},${IDS[4]},${IDS[5]:-${IDS[3]}}" --metric step_time_s
((changes == 0))
