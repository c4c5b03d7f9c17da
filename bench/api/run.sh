#!/usr/bin/env bash
# Benchmark: `falcon serve` answering a filtered experiment list at 100,000 experiments, beside MLflow's
# tracking server answering a filtered runs/search, on the same machine in one run.
#
#   bash bench/api/run.sh [--seconds S] [--mlflow-runs N]      (defaults: 20 s per load, 10,000 MLflow runs)
#
# Falcon: the metastore benchmark's 100,000 experiments (SQLite, `--keep-sqlite`), `falcon serve --no-worker`
# (release build) open on loopback and then with a read token; `oha` (installed into .cache/cargo-bin) with 32
# connections on GET /api/v1/experiments?status=…&label=team=…&goal=…&limit=50, each request a random status,
# team and goal (--rand-regex-url): saturation (requests/s, p50, p99), then a fixed 500 requests/s (p99, with
# latency correction); the same for the dashboard's experiments page (`/` with the same filters); the server's
# peak RSS (VmHWM). MLflow: `mlflow server` (PyPI mlflow, .cache/mlflow-venv,
# scripts/../bench/api/mlflow-requirements.txt) over a SQLite store seeded with N runs by MLflow's own store
# (bench/api/mlflow_seed.py), POST /api/2.0/mlflow/runs/search filtered on status, team and goal, 50 results, the
# same loads. Prints one Markdown table; the raw oha JSON stays in .cache/bench-api/.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
seconds=20 mlflow_runs=10000
while (($#)); do
    case "$1" in
        --seconds) seconds="$2"; shift 2 ;;
        --mlflow-runs) mlflow_runs="$2"; shift 2 ;;
        *) echo "bench/api: unknown argument $1" >&2; exit 2 ;;
    esac
done
OUT="$ROOT/.cache/bench-api"
mkdir -p "$OUT"
log() { printf 'bench/api: %s\n' "$*" >&2; }

OHA="$ROOT/.cache/cargo-bin/bin/oha"
if [[ ! -x "$OHA" ]]; then
    log "installing oha into .cache/cargo-bin (a few minutes, once)"
    cargo install --quiet --locked oha --version 1.16.0 --root "$ROOT/.cache/cargo-bin"
fi
python="$(bash scripts/pinned-venv.sh "$ROOT/.cache/mlflow-venv" bench/api/mlflow-requirements.txt 'import mlflow' mlflow)"
venv_bin="$(dirname "$python")"

cargo build --release --quiet --locked -p falcon-cli
FALCON="$ROOT/target/release/falcon"
if [[ ! -s "$OUT/falcon.db" ]]; then
    log "creating 100,000 experiments (the metastore benchmark's generator)"
    cargo bench -q -p falcon-infra --bench metastore_list -- --n 100000 --queries 50 --sqlite-only \
        --keep-sqlite "$OUT/falcon.db" >&2
fi

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
free_port() { "$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_up() { # URL
    for _ in $(seq 300); do curl -sf -o /dev/null "$1" && return; sleep 0.2; done
    log "$1 did not answer"; exit 1
}
# oha's JSON → "rps p50 p99 bad" (ms); requests cut off by the end of the run are not failures.
summary() {
    "$python" -c 'import json,sys
d=json.load(open(sys.argv[1])); s=d["summary"]; p=d["latencyPercentiles"]
codes=d.get("statusCodeDistribution", {})
errs=d.get("errorDistribution", {})
bad=sum(v for k,v in codes.items() if not k.startswith("2")) + sum(v for k,v in errs.items() if k != "aborted due to deadline")
ms=lambda v: "n/a" if v is None else "%.2f" % (v * 1000)  # no request completed within the run
print("%.0f %s %s %d" % (s["requestsPerSec"], ms(p["p50"]), ms(p["p99"]), bad))' "$1"
}
# load NAME URL [oha args…]: saturation, then 500 requests/s.
load() {
    local name="$1" url="$2"; shift 2
    "$OHA" --no-tui --output-format json -z "${seconds}s" -c 32 "$@" "$url" >"$OUT/$name-sat.json"
    "$OHA" --no-tui --output-format json -z "${seconds}s" -c 32 -q 500 --latency-correction "$@" "$url" \
        >"$OUT/$name-500.json"
    read -r rps p50 p99 bad <<<"$(summary "$OUT/$name-sat.json")"
    read -r _ _ q99 qbad <<<"$(summary "$OUT/$name-500.json")"
    echo "$rps|$p50|$p99|$q99|$((bad + qbad))"
}
rss_mb() { awk '/VmHWM/ { printf "%.0f", $2 / 1024 }' "/proc/$1/status"; }

echo "| server | store | rows | requests/s (32 conn.) | p50 (ms) | p99 (ms) | p99 at 500 req/s (ms) | non-2xx or errors | peak RSS (MB) |"
echo "|---|---|---|---|---|---|---|---|---|"

# Falcon, open and with a token.
port="$(free_port)"
base="http://127.0.0.1:$port"
regex="$base/api/v1/experiments\\?status=(PENDING|PROVISIONING|RUNNING|COMPLETED|FAILED|CANCELLED)&label=team=(perf|infra|research|kernels|serving)&goal=g-([1-9][0-9]?|100)&limit=50"
store=(--db "sqlite://$OUT/falcon.db" --artifacts "$OUT/artifacts")
f() { "$FALCON" "${store[@]}" "$@"; }
"$FALCON" "${store[@]}" serve --no-worker --bind "127.0.0.1:$port" 2>/dev/null & # not through f: $! is falcon
server=$!; pids+=("$server")
wait_up "$base/healthz"
curl -sf "$base/api/v1/experiments?status=RUNNING&label=team=perf&goal=g-17&limit=50" | "$python" -c \
    'import json,sys; d=json.load(sys.stdin); assert d["items"], "the filtered list is empty"'
IFS='|' read -r rps p50 p99 q99 bad <<<"$(load falcon-open "$regex" --rand-regex-url)"
echo "| falcon serve (open, loopback) | SQLite | 100,000 | $rps | $p50 | $p99 | $q99 | $bad | $(rss_mb "$server") |"
# The dashboard's experiments page over the same filters (server-rendered HTML of the same page of rows).
page_regex="$base/\\?status=(PENDING|PROVISIONING|RUNNING|COMPLETED|FAILED|CANCELLED)&label=team=(perf|infra|research|kernels|serving)&goal=g-([1-9][0-9]?|100)&limit=50"
IFS='|' read -r rps p50 p99 q99 bad <<<"$(load falcon-page "$page_regex" --rand-regex-url)"
echo "| falcon serve: dashboard experiments page (open) | SQLite | 100,000 | $rps | $p50 | $p99 | $q99 | $bad | $(rss_mb "$server") |"
token_name="bench-$(date +%s)" # a revoked token's name is not reused
token="$(f token create --name "$token_name" --scope read --json | "$python" -c 'import json,sys; print(json.load(sys.stdin)["token"])')"
sleep 1.2 # the server rereads "any token?" each second
IFS='|' read -r rps p50 p99 q99 bad <<<"$(load falcon-token "$regex" --rand-regex-url -H "Authorization: Bearer $token")"
echo "| falcon serve (read token) | SQLite | 100,000 | $rps | $p50 | $p99 | $q99 | $bad | $(rss_mb "$server") |"
kill "$server"; wait "$server" 2>/dev/null || true
f token revoke "$token_name" >/dev/null

# MLflow.
if [[ ! -s "$OUT/mlflow-$mlflow_runs.db" ]]; then
    log "seeding MLflow with $mlflow_runs runs"
    "$python" bench/api/mlflow_seed.py "$OUT/mlflow-$mlflow_runs.db.tmp" "$mlflow_runs" >"$OUT/mlflow-exp-id"
    mv "$OUT/mlflow-$mlflow_runs.db.tmp" "$OUT/mlflow-$mlflow_runs.db"
fi
port="$(free_port)"
"$venv_bin/mlflow" server --backend-store-uri "sqlite:///$OUT/mlflow-$mlflow_runs.db" --host 127.0.0.1 \
    --port "$port" --workers 2 >"$OUT/mlflow.log" 2>&1 &
server=$!; pids+=("$server")
wait_up "http://127.0.0.1:$port/health"
body="{\"experiment_ids\": [\"$(cat "$OUT/mlflow-exp-id")\"], \"filter\": \"attributes.status = 'FINISHED' and tags.team = 'perf' and tags.goal = 'g-17'\", \"max_results\": 50, \"order_by\": [\"attributes.start_time DESC\"]}"
search="http://127.0.0.1:$port/api/2.0/mlflow/runs/search"
curl -sf -X POST -H 'content-type: application/json' -d "$body" "$search" | "$python" -c \
    'import json,sys; d=json.load(sys.stdin); assert d.get("runs"), "the MLflow search found nothing"'
IFS='|' read -r rps p50 p99 q99 bad <<<"$(load mlflow "$search" -m POST -T application/json -d "$body")"
rss=0
for p in $(pgrep -f "mlflow-$mlflow_runs.db" || true); do rss=$((rss + $(rss_mb "$p" 2>/dev/null || echo 0))); done
echo "| mlflow server (--workers 2) | SQLite | $mlflow_runs | $rps | $p50 | $p99 | $q99 | $bad | $rss (all processes) |"
