#!/usr/bin/env bash
# Trace ingest + analysis, side by side: `falcon profile trace FILE --analysis all --json` vs HTA 0.5.0 (Meta's
# Holistic Trace Analysis: load + temporal breakdown + comm/comp overlap + idle time breakdown, via
# bench/trace/hta_load.py). For each input × tool, N cold runs (a new process each, interleaved across tools so
# load changes hit every tool alike), peak RSS from `/usr/bin/time -f '%e %M'` and wall time from the ns clock
# around it (%e, 10 ms steps, is kept in the raw file); the table reports
# medians, throughput in MB/s of UNCOMPRESSED trace bytes (goal ≥ 177 MB/s, Perfetto's published figure) and peak
# RSS ÷ uncompressed trace size (goal ≤ 1×). Table on stdout and in .cache/trace-bench/table.md, raw runs in
# .cache/trace-bench/raw-<tool>.tsv, each run's stdout/stderr under .cache/trace-bench/logs/.
#
#   bash bench/trace/setup.sh          # once: venv (torch, HTA) and the inputs in .cache/trace-bench/
#   cargo build --release -p falcon-cli
#   bash bench/trace/run.sh [N] [TOOLS] # default N=3; TOOLS = "falcon,hta" (default), "falcon" or "hta"
#
# Inputs: .cache/trace-bench/{xprof_vm.trace.json, pytorch_tfm12.pt.trace.json} and, for falcon only (HTA on
# gzip is a separate optional row: HTA_GZ=1), their .gz copies. Each run gets a fresh directory holding a hard
# link to the input (so a tool that writes beside its input starts clean) and a fresh TMPDIR; the inputs stay in
# the page cache across runs, for every tool alike (this measures parsing and analysis, not the disk).
# Falcon: $FALCON or target/release/falcon; skipped with a note when `falcon profile trace --help` fails.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

N="${1:-3}"
TOOLS="${2:-falcon,hta}"
[[ "$N" =~ ^[0-9]+$ && "$N" -ge 1 ]] || { echo "usage: $0 [N] [falcon,hta]" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 1; }

data="$ROOT/.cache/trace-bench"
venv="$ROOT/.cache/trace-bench-venv/bin"
inputs=(xprof_vm.trace.json pytorch_tfm12.pt.trace.json)
for i in "${inputs[@]}"; do
    [[ -s "$data/$i" && -s "$data/$i.gz" ]] || { echo "missing $data/$i(.gz): run bash bench/trace/setup.sh" >&2; exit 1; }
done

falcon="${FALCON:-$ROOT/target/release/falcon}"
tools=()
if [[ ",$TOOLS," == *,falcon,* ]]; then
    if [[ -x "$falcon" ]] && "$falcon" profile trace --help >/dev/null 2>&1; then
        tools+=(falcon)
    else
        echo "note: $falcon has no 'profile trace' yet: falcon rows are pending" >&2
    fi
fi
if [[ ",$TOOLS," == *,hta,* ]]; then
    [[ -x "$venv/python" ]] || { echo "run bash bench/trace/setup.sh first" >&2; exit 1; }
    tools+=(hta)
fi

out="$data"
logs="$out/logs"
mkdir -p "$logs"
# One raw file per tool, rewritten when that tool is measured: `run.sh 3 falcon` refreshes the falcon rows and
# keeps the HTA ones of an earlier run (the table is built from every raw-*.tsv present).
header=$'input\tbytes\tform\ttool\trep\tseconds\tpeak_kib\toutcome\ttime_e'
for t in "${tools[@]}"; do printf '%s\n' "$header" >"$out/raw-$t.tsv"; done
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

runs=() # "tool form" pairs
for t in "${tools[@]}"; do
    runs+=("$t json")
    if [[ "$t" == falcon || "${HTA_GZ:-0}" == 1 ]]; then runs+=("$t gz"); fi
done

for rep in $(seq 1 "$N"); do
    for input in "${inputs[@]}"; do
        bytes="$(stat -c %s "$data/$input")" # uncompressed size, for every form
        for r in "${runs[@]}"; do
            read -r tool form <<<"$r"
            file="$input"; [[ "$form" == gz ]] && file="$input.gz"
            dir="$(mktemp -d "$work/run.XXXXXX")"
            mkdir -p "$dir/tmp"
            ln "$data/$file" "$dir/$file" 2>/dev/null || cp "$data/$file" "$dir/$file"
            case "$tool" in
                falcon) cmd=("$falcon" profile trace "$dir/$file" --analysis all --json) ;;
                hta) cmd=("$venv/python" "$ROOT/bench/trace/hta_load.py" "$dir/$file") ;;
            esac
            log="$logs/$input.$form.$tool.$rep"
            rc=0
            t0=$(date +%s%N)
            TMPDIR="$dir/tmp" /usr/bin/time -f '%e %M' -o "$work/time" "${cmd[@]}" >"$log.out" 2>"$log.err" || rc=$?
            t1=$(date +%s%N)
            rm -rf "$dir"
            # Peak RSS from time's %M; wall time from the nanosecond clock around it (time's %e has 10 ms steps),
            # which the raw file keeps beside %e.
            read -r e_secs kib < <(grep -E '^[0-9.]+ [0-9]+$' "$work/time" | tail -1)
            secs="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')"
            if [[ "$tool" == hta ]]; then
                outcome="$(sed -n 's/^OUTCOME: //p' "$log.out" | tail -1)"
                [[ -n "$outcome" ]] || outcome="failed: exit $rc: $(grep -v '^\s*$' "$log.err" | tail -1 | cut -c1-200)"
            elif ((rc == 0)); then
                outcome=ok
                python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$log.out" 2>/dev/null ||
                    outcome="ok (stdout is not one JSON document)"
            else
                outcome="failed: exit $rc: $(grep -v '^\s*$' "$log.err" | tail -1 | cut -c1-200)"
            fi
            outcome="${outcome//$'\t'/ }"
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$input" "$bytes" "$form" "$tool" "$rep" "$secs" "$kib" "$outcome" "$e_secs" >>"$out/raw-$tool.tsv"
            printf '%-30s %-4s %-6s rep %s: %7.2f s %9.1f MiB  %s\n' "$input" "$form" "$tool" "$rep" "$secs" \
                "$(awk -v k="$kib" 'BEGIN { print k / 1024 }')" "${outcome:0:120}" >&2
        done
    done
done

falcon_pending=1
[[ -x "$falcon" ]] && "$falcon" profile trace --help >/dev/null 2>&1 && falcon_pending=0
python3 - "$N" "$data/inputs.tsv" "$falcon_pending" "$out"/raw-*.tsv <<'PY' | tee "$out/table.md"
import csv, os, statistics, sys
from collections import defaultdict

n, inputs_tsv, falcon_pending, raws = int(sys.argv[1]), sys.argv[2], sys.argv[3] == "1", sys.argv[4:]
events = {r["name"]: r["events"] for r in csv.DictReader(open(inputs_tsv), delimiter="\t")}
runs, sizes, order = defaultdict(list), {}, []
rows = [r for raw in raws if os.path.exists(raw) for r in csv.DictReader(open(raw), delimiter="\t")]
for r in sorted(rows, key=lambda r: ["xprof_vm.trace.json", "pytorch_tfm12.pt.trace.json"].index(r["input"])
                if r["input"] in ("xprof_vm.trace.json", "pytorch_tfm12.pt.trace.json") else 9):
    if r["input"] not in sizes:
        order.append(r["input"])
    sizes[r["input"]] = int(r["bytes"])
    runs[(r["input"], r["form"], r["tool"])].append(r)

label = {"falcon": "falcon profile trace --analysis all", "hta": "HTA 0.5.0 load + 3 analyses"}
counts = sorted({len(v) for v in runs.values()})
print(f"Median of {' or '.join(map(str, counts)) or 0} cold runs each. MB/s = uncompressed trace bytes (10^6) / wall time; RSS ÷ size = peak RSS / "
      "uncompressed trace bytes. Goals: ≥ 177 MB/s, ≤ 1.0×.\n")
print("| Input | Uncompressed MB | Events | Form | Tool | Time (s) | MB/s | Peak RSS (MiB) | RSS ÷ trace size | Outcome |")
print("|---|---:|---:|---|---|---:|---:|---:|---:|---|")
for inp in order:
    mb = sizes[inp] / 1e6
    for tool in ("falcon", "hta"):
        for form in ("json", "gz"):
            rs = runs.get((inp, form, tool))
            if not rs:
                if tool == "falcon" and falcon_pending:
                    print(f"| {inp} | {mb:.1f} | {events.get(inp, '?')} | {form} | {label[tool]} | pending | pending | pending | pending | pending |")
                continue
            secs = statistics.median(float(r["seconds"]) for r in rs)
            kib = statistics.median(int(r["peak_kib"]) for r in rs)
            outcomes = sorted({r["outcome"] for r in rs})
            # A run that failed before finishing its ingest has no throughput; its time is time-to-failure.
            failed = all(o.startswith("failed") for o in outcomes)
            rate = "n/a" if failed else f"{mb / secs:.1f}"
            cell = " / ".join(outcomes).replace("|", "\\|")
            print(f"| {inp} | {mb:.1f} | {events.get(inp, '?')} | {form} | {label[tool]} | {secs:.3f} | "
                  f"{rate} | {kib / 1024:.1f} | {kib * 1024 / sizes[inp]:.2f}× | {cell} |")
PY
echo "raw measurements: $out/raw-*.tsv; logs: $logs" >&2
