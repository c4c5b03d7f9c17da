#!/usr/bin/env bash
# Tensor dump comparison, side by side: `falcon accuracy tensors A B --json` against the same metrics in numpy
# (bench/tensors/numpy_compare.py: np.load each pair, float64 expressions). Inputs: a pair of fp32 dumps, each a
# directory of N .npy files (default 8 × 128 MiB = 1 GiB per dump), B = A + small noise, written once by
# bench/tensors/gen.py with the example venv's numpy under .cache/tensor-bench/<SIZE_MB>mb/{a,b}.
#
#   bash examples/jax_transformer/setup.sh         # once: .cache/example-venv (numpy)
#   cargo build --release -p falcon-cli
#   bash bench/tensors/run.sh [SIZE_MB] [REPS]      # default 1024 MiB per dump, 3 reps
#
# Each rep runs every tool twice, each time as a new process: "cold" after evicting both dumps from the page cache
# (fsync + posix_fadvise(DONTNEED) per file, which needs no root; if something else keeps the pages, the run is
# warmer than it says), then "warm" (page cache hot: parsing and arithmetic only). Wall time from the ns clock
# around the process, peak RSS from `/usr/bin/time -f %M`. Throughput = bytes of tensor data read (A + B, the
# report's `bytes_compared`) / wall seconds of the whole process. The anchor: msprobe compares dumps at
# 0.1–0.3 GB/s on a 192-core box. The table (medians) goes to stdout and .cache/tensor-bench/table-<SIZE>mb.md;
# raw runs to raw-<SIZE>mb.tsv; each run's output to logs/. The falcon and numpy reports are checked to agree
# (max abs error, rel L2, allclose per tensor) on the first warm rep.
# Falcon: $FALCON or target/release/falcon. Threads: all cores (falcon); numpy as it comes (BLAS threads for dot).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

SIZE_MB="${1:-1024}"
REPS="${2:-3}"
[[ "$SIZE_MB" =~ ^[0-9]+$ && "$SIZE_MB" -ge 8 && "$REPS" =~ ^[0-9]+$ && "$REPS" -ge 1 ]] || { echo "usage: $0 [SIZE_MB>=8] [REPS]" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
PY="$ROOT/.cache/example-venv/bin/python"
[[ -x "$PY" ]] || { echo "missing $PY: run bash examples/jax_transformer/setup.sh" >&2; exit 1; }
falcon="${FALCON:-$ROOT/target/release/falcon}"
[[ -x "$falcon" ]] || { echo "missing $falcon: cargo build --release -p falcon-cli" >&2; exit 1; }

out="$ROOT/.cache/tensor-bench"
data="$out/${SIZE_MB}mb"
logs="$out/logs"
mkdir -p "$logs"
if [[ ! -f "$data/.done" ]]; then
    rm -rf "$data"
    echo "generating $data (2 × $SIZE_MB MiB)…" >&2
    "$PY" "$ROOT/bench/tensors/gen.py" "$data" "$SIZE_MB" 8 >&2
    touch "$data/.done"
fi

evict() {
    "$PY" - "$data/a" "$data/b" <<'PYEOF'
import os, sys
for d in sys.argv[1:]:
    for name in os.listdir(d):
        fd = os.open(os.path.join(d, name), os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
PYEOF
}

raw="$out/raw-${SIZE_MB}mb.tsv"
printf 'tool\tmode\trep\tseconds\tpeak_kib\tbytes\n' >"$raw"
bytes=""
for rep in $(seq 1 "$REPS"); do
    for tool in falcon numpy; do
        for mode in cold warm; do
            [[ "$mode" == cold ]] && evict
            log="$logs/${SIZE_MB}mb.$tool.$mode.$rep"
            case "$tool" in
                falcon) cmd=("$falcon" accuracy tensors "$data/a" "$data/b" --json) ;;
                numpy) cmd=("$PY" "$ROOT/bench/tensors/numpy_compare.py" "$data/a" "$data/b") ;;
            esac
            t0=$(date +%s%N)
            /usr/bin/time -f '%M' -o "$log.time" "${cmd[@]}" >"$log.json" 2>"$log.err" || { echo "$tool failed: see $log.err" >&2; exit 1; }
            t1=$(date +%s%N)
            secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
            kib=$(tail -n 1 "$log.time")
            b=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["bytes_compared"])' "$log.json")
            bytes="$b"
            printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$tool" "$mode" "$rep" "$secs" "$kib" "$b" >>"$raw"
            echo "rep $rep $tool $mode: ${secs} s, $((kib / 1024)) MiB peak RSS" >&2
        done
    done
done

# The two tools' numbers agree (first warm rep).
"$PY" - "$logs/${SIZE_MB}mb.falcon.warm.1.json" "$logs/${SIZE_MB}mb.numpy.warm.1.json" <<'PYEOF'
import json, sys
f = {t["name"]: t for t in json.load(open(sys.argv[1]))["tensors"]}
n = {t["name"]: t for t in json.load(open(sys.argv[2]))["tensors"]}
assert f.keys() == n.keys(), (sorted(f), sorted(n))
for k in f:
    for m in ("max_abs_err", "rel_l2", "mean_abs_err", "cosine"):
        a, b = f[k][m], n[k][m]
        assert abs(a - b) <= 1e-6 * max(abs(a), abs(b), 1e-300), (k, m, a, b)
    for m in ("allclose", "max_abs_err_index", "max_ulp", "nan_a", "nan_b"):
        assert f[k][m] == n[k][m], (k, m, f[k][m], n[k][m])
print(f"falcon and numpy agree on {len(f)} tensors", file=sys.stderr)
PYEOF

table="$out/table-${SIZE_MB}mb.md"
"$PY" - "$raw" "$SIZE_MB" "$(nproc)" >"$table" <<'PYEOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
size, cores = sys.argv[2], sys.argv[3]
med = {}
for tool in ("falcon", "numpy"):
    for mode in ("cold", "warm"):
        rs = [r for r in rows if r["tool"] == tool and r["mode"] == mode]
        s = statistics.median(float(r["seconds"]) for r in rs)
        kib = statistics.median(int(r["peak_kib"]) for r in rs)
        med[tool, mode] = (s, kib, int(rs[0]["bytes"]), len(rs))
print(f"Tensor dump comparison: 2 × {size} MiB fp32 (.npy directories, 8 tensors each), {cores} cores, medians")
print()
print("| tool | cache | runs | wall s | GB/s (A+B bytes / wall) | peak RSS MiB | falcon speed-up |")
print("|---|---|---|---|---|---|---|")
for mode in ("cold", "warm"):
    for tool in ("falcon", "numpy"):
        s, kib, b, n = med[tool, mode]
        up = f"{med['numpy', mode][0] / s:.1f}×" if tool == "falcon" else ""
        print(f"| {tool} | {mode} | {n} | {s:.3f} | {b / s / 1e9:.2f} | {kib / 1024:.0f} | {up} |")
print()
print("Anchor: msprobe compare 0.1–0.3 GB/s on a 192-core box (research brief §4.3).")
PYEOF
cat "$table"
