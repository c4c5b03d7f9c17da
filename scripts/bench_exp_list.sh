#!/usr/bin/env bash
# Times `falcon exp list` (a whole process: start, connect, query, JSON) on 100,000 experiments.
# Usage: scripts/bench_exp_list.sh [RUNS]   (default 50). Builds release binaries; writes under .cache/bench-exp-list/.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
RUNS="${1:-50}"
OUT="$ROOT/.cache/bench-exp-list"
rm -rf "$OUT" && mkdir -p "$OUT"
cargo build --release -q -p falcon-cli
cargo bench -q -p falcon-infra --bench metastore_list -- --n 100000 --queries 200 --sqlite-only --keep-sqlite "$OUT/falcon.db" >&2
FALCON="$ROOT/target/release/falcon"
run() { # prints milliseconds of one run
    local start end
    start=$(date +%s%N)
    "$FALCON" --db "sqlite://$OUT/falcon.db" --artifacts "$OUT/artifacts" "$@" > "$OUT/out.json"
    end=$(date +%s%N)
    echo $(( (end - start) / 1000 ))
}
measure() {
    local label="$1"; shift
    local times=()
    for _ in $(seq "$RUNS"); do times+=("$(run "$@")"); done
    printf '%s\n' "${times[@]}" | sort -n | awk -v label="$label" -v rows="$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$OUT/out.json")" '
        { v[NR] = $1 } END { printf "| %s | %d | %.2f | %.2f | %.2f |\n", label, rows, v[int((NR+1)/2)]/1000, v[int(NR*0.99+0.5)]/1000, v[NR]/1000 }'
}
echo "| command (whole process, 100,000 experiments) | rows | p50 (ms) | p99 (ms) | max (ms) |"
echo "|---|---|---|---|---|"
measure "exp list --json --status RUNNING --goal g-17 --label team=perf" exp list --json --status RUNNING --goal g-17 --label team=perf
measure "exp list --json (newest 50)" exp list --json
measure "exp list --json --label model=model-3 --limit 200" exp list --json --label model=model-3 --limit 200
