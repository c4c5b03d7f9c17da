#!/usr/bin/env bash
# The multi-host analysis at scale: `falcon profile trace RUN --json` and `falcon profile analyze RUN --tool steps
# --json` over runs of N hosts made of copies of the real 8-process JAX run whose process 5 starts each step 80 ms
# late (crates/falcon-analysis/tests/data/multihost/jax-8-late5-80ms: copy c of process i is host c·8+i, so every
# collective instance has N members), each a cold process, 3 repetitions interleaved; median wall time and median
# peak RSS (`/usr/bin/time -f %M`). Beside them, what a user would otherwise run: the raw-event script
# examples/multihost/reference.py (JAX's own XSpace reader, then the same matching in Python) on the 8-host run.
#
#   bash bench/xprof/multihost.sh [N ...]      # default N = 8 64 256; FALCON=path (default target/release/falcon)
#
# With FALCON_TEST_GCS_ENDPOINT set (`scripts/services.sh up && source .cache/services.env`), the largest N is also
# uploaded to the GCS emulator and `profile analyze` reads it from `gs://` (each host analysed as it downloads).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
source "$ROOT/bench/xprof/lib.sh"
counts=("$@")
((${#counts[@]})) || counts=(8 64 256)
falcon="${FALCON:-$ROOT/target/release/falcon}"
[[ -x "$falcon" ]] || { echo "build it first: cargo build --release -p falcon-cli" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
src="$ROOT/crates/falcon-analysis/tests/data/multihost/jax-8-late5-80ms"
from="$src/plugins/profile/2026_12_01_00_00_00"
work="$ROOT/.cache/multihost-bench"
for n in "${counts[@]}"; do
    run="$work/h$n/plugins/profile/run"
    if [[ $(ls "$run" 2>/dev/null | wc -l) -ne $n ]]; then
        rm -rf "$work/h$n"
        mkdir -p "$run"
        for ((h = 0; h < n; h++)); do cp "$from/host-$((h % 8)).xplane.pb" "$(printf '%s/host%03d.xplane.pb' "$run" "$h")"; done
    fi
done

declare -A input cmd
labels=()
for n in "${counts[@]}"; do
    for what in trace analyze; do
        labels+=("$what:$n")
        input["$what:$n"]="$work/h$n"
        cmd["$what:$n"]="$what"
    done
done
gcs="${FALCON_TEST_GCS_ENDPOINT:-}"
if [[ -n "$gcs" ]]; then
    n="${counts[-1]}"
    bucket="falcon-multihost-bench"
    curl -fsS -X POST -H 'Content-Type: application/json' -d "{\"name\":\"$bucket\"}" "$gcs/storage/v1/b" >/dev/null 2>&1 || true
    for f in "$work/h$n"/plugins/profile/run/*.xplane.pb; do
        curl -fsS -X POST --data-binary "@$f" -H 'Content-Type: application/octet-stream' \
            "$gcs/upload/storage/v1/b/$bucket/o?uploadType=media&name=run%2Fplugins%2Fprofile%2Frun%2F$(basename "$f")" >/dev/null
    done
    labels+=("analyze:gs:$n")
    input["analyze:gs:$n"]="gs://$bucket/run"
    cmd["analyze:gs:$n"]=analyze
fi
python="$(bash examples/jax_transformer/setup.sh 2>/dev/null)"
labels+=("reference.py:8")

declare -A secs rss
for rep in 1 2 3; do
    for label in "${labels[@]}"; do
        data="$(mktemp -d)"
        env=(FALCON_DATA_DIR="$data")
        [[ -z "$gcs" ]] || env+=(FALCON_GCS_ENDPOINT="$gcs" FALCON_GCS_ANONYMOUS=1)
        if [[ $label == reference.py:8 ]]; then
            measure "$label" "$python" examples/multihost/reference.py "$src" --out "$data/r.json"
        elif [[ ${cmd[$label]} == trace ]]; then
            measure "$label" env "${env[@]}" "$falcon" profile trace "${input[$label]}" --json
        else
            measure "$label" env "${env[@]}" "$falcon" profile analyze "${input[$label]}" --tool steps --fan-out 0 --json
        fi
        rm -rf "$data"
    done
done
printf '| command | hosts | wall (s) | peak RSS (MiB) |\n|---|---:|---:|---:|\n'
for label in "${labels[@]}"; do
    s=$(echo "${secs[$label]}" | median)
    m=$(echo "${rss[$label]}" | median)
    what="${label%%:*}"
    n="${label##*:}"
    [[ $label == analyze:gs:* ]] && what="analyze (gs://)"
    [[ $what == trace ]] && what="falcon profile trace"
    [[ $what == analyze ]] && what="falcon profile analyze --tool steps"
    [[ $what == "analyze (gs://)" ]] && what="falcon profile analyze --tool steps, from gs://"
    [[ $what == reference.py ]] && what="examples/multihost/reference.py (Python, JAX's reader)"
    awk -v w="$what" -v n="$n" -v s="$s" -v m="$m" 'BEGIN { printf "| %s | %s | %.3f | %.1f |\n", w, n, s / 1000, m / 1024 }'
done
