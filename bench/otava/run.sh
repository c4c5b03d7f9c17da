#!/usr/bin/env bash
# Change-point detection, Falcon vs Apache Otava, on the same files. From the repository root:
#   bench/otava/run.sh [DRAWS] [SMALL]
# DRAWS: extra long series per kind and size (default 20; 0 = the issue's two only). SMALL: draws per cell of the
# small-n power table of issue 16 (4 nightly runs, then 1-7 shifted runs; stable short series; default 200;
# 0 = skip it).
# Needs python3 with venv and network access to PyPI the first time (Otava is installed into
# .cache/otava-venv, which is gitignored). Prints Markdown tables; raw JSON lines go to .cache/otava-bench/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
draws="${1:-20}"
small="${2:-200}"
venv=.cache/otava-venv
out=.cache/otava-bench
if [[ ! -x $venv/bin/python ]]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet apache-otava==0.8.0 numpy
fi
rm -rf "$out" && mkdir -p "$out/data" "$out/small"
"$venv/bin/python" bench/otava/gen_series.py "$out/data" --draws "$draws" >/dev/null
"$venv/bin/python" bench/otava/run_otava.py "$out/data" --json > "$out/otava.jsonl"
cargo bench -q -p falcon-core --bench change_points -- "$PWD/$out/data" > "$out/falcon.jsonl"
"$venv/bin/python" bench/otava/report.py "$out/otava.jsonl" "$out/falcon.jsonl"
if (( small > 0 )); then
    echo
    "$venv/bin/python" bench/otava/gen_series.py "$out/small" --small "$small" >/dev/null
    # Otava's result on each short series, untimed (--repeat 0); Falcon's bench times both of its detectors.
    "$venv/bin/python" bench/otava/run_otava.py "$out/small" --json --repeat 0 > "$out/otava-small.jsonl"
    cargo bench -q -p falcon-core --bench change_points -- "$PWD/$out/small" > "$out/falcon-small.jsonl"
    "$venv/bin/python" bench/otava/report.py "$out/otava-small.jsonl" "$out/falcon-small.jsonl"
fi
