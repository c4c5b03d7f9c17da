#!/usr/bin/env bash
# Benchmarks `falcon profile compare A B` on two large captures, cold, against what a user runs today to diff
# two profiles by hand: XProf's (and xprof-rs's) `get_top_hlo_ops` on each file (XProf has no compare
# command; its UI diff needs both sessions converted first). Each command is a cold process on fresh copies
# of the inputs, repeated N times interleaved; the table reports the median wall time (date +%N around the
# process(es)) and the median peak RSS (`/usr/bin/time -f %M`; for the two-process baselines the sum of the
# times and the larger RSS). Writes the table to stdout and, with raw measurements, to .cache/compare-bench/.
#
#   bash examples/jax_transformer/setup.sh
#   .cache/example-venv/bin/python examples/jax_transformer/capture_large.py .cache/compare-large/a
#   .cache/example-venv/bin/python examples/jax_transformer/capture_large.py .cache/compare-large/b --batch-size 16
#   cargo build --release -p falcon-cli
#   bash bench/xprof/setup.sh          # optional: the XProf / xprof-rs baselines
#   bash bench/compare/run.sh [N] [A.xplane.pb B.xplane.pb]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

N="${1:-3}"
[[ "$N" =~ ^[0-9]+$ && "$N" -ge 1 ]] || { echo "usage: $0 [N] [A B]" >&2; exit 2; }
shift || true
if (($# == 2)); then
    A="$1" B="$2"
else
    A="$(ls -t .cache/compare-large/a/plugins/profile/*/*.xplane.pb 2>/dev/null | head -1 || true)"
    B="$(ls -t .cache/compare-large/b/plugins/profile/*/*.xplane.pb 2>/dev/null | head -1 || true)"
fi
[[ -f "$A" && -f "$B" ]] || { echo "error: no capture pair; make it with capture_large.py (see the header of $0)" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
falcon="${FALCON:-$ROOT/target/release/falcon}"
"$falcon" profile compare --help >/dev/null 2>&1 || { echo "error: $falcon has no 'profile compare' (cargo build --release -p falcon-cli)" >&2; exit 1; }

venv="$ROOT/.cache/xprof-bench-venv/bin"
tools=("falcon profile compare --json" "falcon profile compare --format html")
if [[ -x "$venv/xprof" && -x "$venv/xprof-rs" ]]; then
    tools+=("XProf get_top_hlo_ops A + B" "xprof-rs get_top_hlo_ops A + B")
else
    echo "note: no .cache/xprof-bench-venv (bash bench/xprof/setup.sh): measuring falcon only" >&2
fi

out="$ROOT/.cache/compare-bench"
mkdir -p "$out"
raw="$out/raw.tsv"
printf 'tool\trep\tseconds\tpeak_kib\tstatus\n' >"$raw"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Runs one process under /usr/bin/time; appends "seconds peak_kib" to $work/measure; returns its status.
one() {
    local t0 t1
    t0=$(date +%s%N)
    /usr/bin/time -f '%M' -o "$work/time" "$@" >"$work/stdout" 2>"$work/stderr" || return $?
    t1=$(date +%s%N)
    echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", (b - a) / 1e9 }') $(tail -1 "$work/time")" >>"$work/measure"
}

for rep in $(seq 1 "$N"); do
    for tool in "${tools[@]}"; do
        dir="$(mktemp -d "$work/run.XXXXXX")"
        mkdir -p "$dir/tmp" "$dir/a" "$dir/b"
        cp "$A" "$dir/a/" && cp "$B" "$dir/b/"
        a="$dir/a/$(basename "$A")" b="$dir/b/$(basename "$B")"
        : >"$work/measure"
        status=ok
        case "$tool" in
            "falcon profile compare --json") TMPDIR="$dir/tmp" one "$falcon" profile compare "$a" "$b" --json || status="exit $?" ;;
            "falcon profile compare --format html") TMPDIR="$dir/tmp" one "$falcon" profile compare "$a" "$b" --format html -o "$dir/c.html" || status="exit $?" ;;
            "XProf get_top_hlo_ops A + B")
                TMPDIR="$dir/tmp" one "$venv/xprof" get_top_hlo_ops "$a" --bypass_cache || status="exit $?"
                TMPDIR="$dir/tmp" one "$venv/xprof" get_top_hlo_ops "$b" --bypass_cache || status="exit $?" ;;
            "xprof-rs get_top_hlo_ops A + B")
                TMPDIR="$dir/tmp" one "$venv/xprof-rs" get_top_hlo_ops "$a" || status="exit $?"
                TMPDIR="$dir/tmp" one "$venv/xprof-rs" get_top_hlo_ops "$b" || status="exit $?" ;;
        esac
        rm -rf "$dir"
        read -r secs kib < <(awk '{ s += $1; if ($2 > m) m = $2 } END { printf "%.4f %d\n", s, m }' "$work/measure")
        printf '%s\t%s\t%s\t%s\t%s\n' "$tool" "$rep" "$secs" "$kib" "$status" >>"$raw"
        printf '%-40s rep %s: %7.2f s %8.1f MiB %s\n' "$tool" "$rep" "$secs" "$(awk -v k="$kib" 'BEGIN { print k / 1024 }')" "$status" >&2
    done
done

python3 - "$raw" "$A" "$B" <<'PY' | tee "$out/table.md"
import csv, os, statistics, sys
raw, a, b = sys.argv[1:4]
runs = {}
for r in csv.DictReader(open(raw), delimiter="\t"):
    runs.setdefault(r["tool"], []).append(r)
print(f"Inputs: A {os.path.getsize(a) / 1e6:.1f} MB, B {os.path.getsize(b) / 1e6:.1f} MB; median of {len(next(iter(runs.values())))} cold runs.\n")
print("| Command | Time (s) | Peak RSS (MiB) | Time vs falcon --json |")
print("|---|---:|---:|---:|")
med = {t: (statistics.median(float(r["seconds"]) for r in rs), statistics.median(int(r["peak_kib"]) for r in rs) / 1024,
           all(r["status"] == "ok" for r in rs)) for t, rs in runs.items()}
base = med["falcon profile compare --json"][0]
for t, (s, m, ok) in med.items():
    print(f"| {t}{'' if ok else ' (failed)'} | {s:.3f} | {m:.1f} | {s / base:.2f}x |")
PY
