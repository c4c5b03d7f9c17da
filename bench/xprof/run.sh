#!/usr/bin/env bash
# Benchmarks `falcon profile analyze` against XProf 2.24.2 and xprof-rs on the same files, side by side in
# one run: each command is a cold process (a new process on a fresh copy of the input), repeated N times
# (interleaved, so load changes hit every tool alike); the table reports the median wall time (date +%N
# around the process) and the median peak RSS (`/usr/bin/time -f %M`) and the ratios. Writes the table to stdout and, with the
# raw measurements, to .cache/xprof-bench/.
#
#   bash bench/xprof/setup.sh                       # once: XProf + xprof-rs venv
#   bash bench/xprof/run.sh [N] [FILE.xplane.pb...] # default N=3; default inputs below
#
# Inputs (default): the three captures in crates/falcon-xplane/tests/data/ and the newest large capture
# under .cache/capture-large-out/ (make it with examples/jax_transformer/capture_large.py, see
# docs/PERFORMANCE.md).
#
# Falcon: target/release/falcon (or $FALCON) when it has `profile analyze`, run as
# `falcon profile analyze FILE --tool all --json`. Without it the script measures the decoder alone as a
# stand-in, `target/release/examples/decode_stats FILE` (built here), and labels those rows "stand-in".
# With the real CLI, the decoder alone (decode_stats) is measured too, as a separate row. XProf (with
# --bypass_cache, its CLI has a result cache) and xprof-rs each run `get_overview` and `get_top_hlo_ops`;
# since falcon computes both (and more) in one process, the ratios compare falcon with the sum of the two
# commands' times and with the larger of their peak RSS, and also with `get_overview` alone.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

N="${1:-3}"
[[ "$N" =~ ^[0-9]+$ && "$N" -ge 1 ]] || { echo "usage: $0 [N] [FILE...]" >&2; exit 2; }
shift || true

venv="$ROOT/.cache/xprof-bench-venv/bin"
[[ -x "$venv/xprof" && -x "$venv/xprof-rs" ]] || { echo "run bash bench/xprof/setup.sh first" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 1; }

inputs=("$@")
if ((${#inputs[@]} == 0)); then
    inputs=(crates/falcon-xplane/tests/data/*.xplane.pb)
    large="$(ls -t .cache/capture-large-out/plugins/profile/*/*.xplane.pb 2>/dev/null | head -1 || true)"
    if [[ -n "$large" ]]; then inputs+=("$large"); else echo "note: no large capture under .cache/capture-large-out" >&2; fi
fi

falcon="${FALCON:-$ROOT/target/release/falcon}"
if [[ -x "$falcon" ]] && "$falcon" profile analyze --help >/dev/null 2>&1; then
    falcon_label="falcon profile analyze --tool all"
    falcon_cmd=("$falcon" profile analyze @FILE@ --tool all --json)
else
    echo "note: $falcon has no 'profile analyze'; measuring the decoder stand-in (examples/decode_stats)" >&2
    cargo build --release --quiet -p falcon-xplane --example decode_stats
    falcon_label="falcon decode_stats (stand-in)"
    falcon_cmd=("$ROOT/target/release/examples/decode_stats" @FILE@)
fi

out="$ROOT/.cache/xprof-bench"
mkdir -p "$out"
raw="$out/raw.tsv"
printf 'input\tbytes\ttool\trep\tseconds\tpeak_kib\tstatus\n' >"$raw"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

tools=("XProf get_overview" "XProf get_top_hlo_ops" "xprof-rs get_overview" "xprof-rs get_top_hlo_ops" "$falcon_label")
if [[ "$falcon_label" != *stand-in* ]]; then
    # The decoder alone, for where falcon's time and memory go (not in the ratios).
    cargo build --release --quiet -p falcon-xplane --example decode_stats
    tools+=("falcon-xplane decode only")
fi
# The decoder leaving out the stats no analysis reads (DecodeOptions::skip_stats): what a lean
# `profile analyze` could get (not in the ratios).
LEAN_SKIP="${LEAN_SKIP:-_src,_pt,_p,_ct,_c}"
tools+=("falcon-xplane decode only, skip_stats")
command_for() { # tool, file -> the command in the array `cmd`
    case "$1" in
        # --bypass_cache: XProf's CLI keeps results in a SQLite cache ($TMPDIR/xprof_cli_cache_$USER)
        # keyed by the file's fingerprint, so a second run on a copy would be a cache hit.
        "XProf get_overview") cmd=("$venv/xprof" get_overview "$2" --bypass_cache) ;;
        "XProf get_top_hlo_ops") cmd=("$venv/xprof" get_top_hlo_ops "$2" --bypass_cache) ;;
        "falcon-xplane decode only") cmd=("$ROOT/target/release/examples/decode_stats" "$2") ;;
        "falcon-xplane decode only, skip_stats") cmd=("$ROOT/target/release/examples/decode_stats" "$2" --skip-stats "$LEAN_SKIP") ;;
        "xprof-rs get_overview") cmd=("$venv/xprof-rs" get_overview "$2") ;;
        "xprof-rs get_top_hlo_ops") cmd=("$venv/xprof-rs" get_top_hlo_ops "$2") ;;
        *) cmd=("${falcon_cmd[@]/@FILE@/$2}") ;;
    esac
}

for rep in $(seq 1 "$N"); do
    for input in "${inputs[@]}"; do
        name="$(basename "$input")"
        bytes="$(stat -c %s "$input")"
        for tool in "${tools[@]}"; do
            # A fresh directory and copy per run (XProf writes op_stats caches beside the input), and a
            # fresh TMPDIR (where XProf's CLI keeps its result cache).
            dir="$(mktemp -d "$work/run.XXXXXX")"
            mkdir -p "$dir/tmp"
            cp "$input" "$dir/$name"
            command_for "$tool" "$dir/$name"
            status=ok
            t0=$(date +%s%N)
            TMPDIR="$dir/tmp" /usr/bin/time -f '%M' -o "$work/time" "${cmd[@]}" >"$work/stdout" 2>"$work/stderr" || status="exit $?"
            t1=$(date +%s%N)
            if [[ "$status" != ok ]]; then cp "$work/stdout" "$out/failed-$name-${tool// /_}.out"; fi
            rm -rf "$dir"
            kib="$(tail -1 "$work/time")"
            secs="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", (b - a) / 1e9 }')"
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$bytes" "$tool" "$rep" "$secs" "$kib" "$status" >>"$raw"
            printf '%-28s %-36s rep %s: %6.2f s %8.1f MiB %s\n' "$name" "$tool" "$rep" "$secs" "$(awk -v k="$kib" 'BEGIN { print k / 1024 }')" "$status" >&2
        done
    done
done

python3 - "$raw" "$N" "$falcon_label" <<'PY' | tee "$out/table.md"
import csv, statistics, sys
from collections import defaultdict

raw, n, falcon = sys.argv[1], int(sys.argv[2]), sys.argv[3]
runs = defaultdict(list)
sizes, order = {}, []
for r in csv.DictReader(open(raw), delimiter="\t"):
    if r["input"] not in sizes:
        order.append(r["input"])
    sizes[r["input"]] = int(r["bytes"])
    runs[(r["input"], r["tool"])].append(r)

def med(inp, tool):
    rs = runs.get((inp, tool), [])
    ok = [r for r in rs if r["status"] == "ok"]
    if not ok:
        return None
    return statistics.median(float(r["seconds"]) for r in ok), statistics.median(int(r["peak_kib"]) for r in ok) / 1024

print(f"Median of {n} cold runs; wall time in seconds, peak RSS in MiB.\n")
print("| Input | Size | Tool | Time (s) | Peak RSS (MiB) |")
print("|---|---:|---|---:|---:|")
tools = ["XProf get_overview", "XProf get_top_hlo_ops", "xprof-rs get_overview", "xprof-rs get_top_hlo_ops", falcon]
for extra in ("falcon-xplane decode only", "falcon-xplane decode only, skip_stats"):
    if any(t == extra for (_, t) in runs):
        tools.append(extra)
for inp in order:
    for t in tools:
        m = med(inp, t)
        if m is None and not runs.get((inp, t)):
            continue
        cell = ("failed", "failed") if m is None else (f"{m[0]:.3f}", f"{m[1]:.1f}")
        print(f"| {inp} | {sizes[inp] / 1e6:.1f} MB | {t} | {cell[0]} | {cell[1]} |")

print()
print(f"Ratios of `{falcon}` (both = get_overview + get_top_hlo_ops: sum of the times, larger peak RSS; "
      "targets: time ≤ 1.0× xprof-rs, RSS ≤ 0.5× xprof-rs, ≥ 20× faster than XProf).\n")
print("| Input | falcon ÷ xprof-rs time (overview / both) | falcon ÷ xprof-rs peak RSS (overview / both) | XProf ÷ falcon time (overview / both) |")
print("|---|---:|---:|---:|")
for inp in order:
    f = med(inp, falcon)
    xo, xt = med(inp, "xprof-rs get_overview"), med(inp, "xprof-rs get_top_hlo_ops")
    po, pt = med(inp, "XProf get_overview"), med(inp, "XProf get_top_hlo_ops")
    def pair(a, b):
        return "n/a" if a is None or b is None else f"{a:.2f} / {b:.2f}"
    def div(a, b):
        return a / b if b else None
    if f is None:
        print(f"| {inp} | n/a | n/a | n/a |")
        continue
    t_rs = pair(div(f[0], xo[0]) if xo else None, div(f[0], xo[0] + xt[0]) if xo and xt else None)
    m_rs = pair(div(f[1], xo[1]) if xo else None, div(f[1], max(xo[1], xt[1])) if xo and xt else None)
    sp = pair(div(po[0], f[0]) if po else None, div(po[0] + pt[0], f[0]) if po and pt else None)
    print(f"| {inp} | {t_rs} | {m_rs} | {sp} |")
PY
echo "raw measurements: $raw" >&2
