#!/usr/bin/env bash
# Many hosts on one machine: `falcon profile analyze RUN_DIR --tool overview --json` over a run directory holding
# N copies of one capture as its hosts (`plugins/profile/<run>/host-NNN.xplane.pb`), each a cold process, 3
# repetitions interleaved; median wall time and median peak RSS (`/usr/bin/time -f %M`), and both as ratios to
# one host. The copies live under .cache/xprof-hosts/ (N × the capture's size on disk) and are kept for reruns.
#
#   bash bench/xprof/hosts.sh [FILE.xplane.pb] [N ...]    # default: the newest large capture; N = 1 8 64
#
# With FALCON_TEST_GCS_ENDPOINT set (`scripts/services.sh up && source .cache/services.env`), the largest N is also
# uploaded to the GCS emulator and analysed from `gs://` (streamed: each host analysed as it downloads, into a
# fresh data dir each time so nothing comes from the cache), as the last row.
#
# Make the large capture first (docs/PERFORMANCE.md, "Profile analysis"); build target/release/falcon.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
source "$ROOT/bench/xprof/lib.sh"

capture="${1:-$(ls -t .cache/capture-large-out/plugins/profile/*/*.xplane.pb 2>/dev/null | head -1 || true)}"
[[ -n "$capture" && -f "$capture" ]] || { echo "no capture: pass FILE.xplane.pb or make the large capture" >&2; exit 1; }
shift || true
counts=("$@")
((${#counts[@]})) || counts=(1 8 64)
falcon="${FALCON:-$ROOT/target/release/falcon}"
[[ -x "$falcon" ]] || { echo "build it first: cargo build --release -p falcon-cli" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 1; }

work="$ROOT/.cache/xprof-hosts"
bytes=$(stat -c %s "$capture")
for n in "${counts[@]}"; do
    run="$work/h$n/plugins/profile/2026_01_01_00_00_00"
    if [[ $(ls "$run" 2>/dev/null | wc -l) -ne $n || $(stat -c %s "$run/host-000.xplane.pb" 2>/dev/null || echo 0) -ne $bytes ]]; then
        rm -rf "$work/h$n"
        mkdir -p "$run"
        for ((i = 0; i < n; i++)); do cp "$capture" "$(printf '%s/host-%03d.xplane.pb' "$run" "$i")"; done
    fi
done

labels=("${counts[@]}")
declare -A input
for n in "${counts[@]}"; do input[$n]="$work/h$n"; done
gcs="${FALCON_TEST_GCS_ENDPOINT:-}"
if [[ -n "$gcs" ]]; then
    n="${counts[-1]}"
    bucket="falcon-hosts-bench"
    curl -fsS -X POST -H 'Content-Type: application/json' -d "{\"name\":\"$bucket\"}" "$gcs/storage/v1/b" >/dev/null 2>&1 || true
    for f in "$work/h$n"/plugins/profile/*/*.xplane.pb; do
        name="run%2Fplugins%2Fprofile%2F2026_01_01_00_00_00%2F$(basename "$f")"
        curl -fsS -X POST --data-binary "@$f" -H 'Content-Type: application/octet-stream' \
            "$gcs/upload/storage/v1/b/$bucket/o?uploadType=media&name=$name" >/dev/null
    done
    labels+=("gs:$n")
    input["gs:$n"]="gs://$bucket/run"
fi

declare -A secs rss
for rep in 1 2 3; do
    for label in "${labels[@]}"; do
        data="$(mktemp -d)"
        env=(FALCON_DATA_DIR="$data")
        [[ -z "$gcs" ]] || env+=(FALCON_GCS_ENDPOINT="$gcs" FALCON_GCS_ANONYMOUS=1)
        measure "$label" env "${env[@]}" "$falcon" profile analyze "${input[$label]}" --tool overview --json
        rm -rf "$data"
    done
done
one_s=""
one_m=""
printf '| hosts | input (MB) | wall (s) | peak RSS (MiB) | wall ÷ one host | RSS ÷ one host |\n|---:|---:|---:|---:|---:|---:|\n'
for label in "${labels[@]}"; do
    s=$(echo "${secs[$label]}" | median)
    m=$(echo "${rss[$label]}" | median)
    [[ -n "$one_s" ]] || { one_s=$s; one_m=$m; }
    n="${label#gs:}"
    awk -v l="$label" -v n="$n" -v b="$bytes" -v s="$s" -v m="$m" -v os="$one_s" -v om="$one_m" 'BEGIN {
        printf "| %s | %.0f | %.3f | %.1f | %.2f | %.2f |\n", l, n * b / 1e6, s / 1000, m / 1024, s / os, m / om }'
done
