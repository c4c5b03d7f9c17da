#!/usr/bin/env bash
# Prepares the trace-analysis benchmark (`bench/trace/run.sh`): `falcon profile trace` vs HTA (Meta's Holistic
# Trace Analysis). Idempotent: skips every step whose result is already there.
#
#   bash bench/trace/setup.sh
#   PYTHON=python3.11 bash bench/trace/setup.sh
#
# 1. venv <repo>/.cache/trace-bench-venv with torch (CPU use only; from the PyTorch CPU wheel index when it is
#    reachable, else PyPI's wheel, which pulls the CUDA libraries, ~5 GB) and holistictraceanalysis (HTA).
# 2. Inputs, in <repo>/.cache/trace-bench/ (gitignored; never commit them), each uncompressed and gzipped:
#    (a) xprof_vm.trace.json: the Chrome trace that XProf 2.24.2's `trace_viewer` tool writes for the large JAX
#        capture .cache/capture-large-out/plugins/profile/<run>/vm.xplane.pb (needs bash bench/xprof/setup.sh
#        and the capture, see docs/PERFORMANCE.md; override with XPLANE=path). Converted offline on a copy
#        (XProf writes caches beside its input).
#    (b) pytorch_tfm12.pt.trace.json: a PyTorch profiler (Kineto) trace of a 12-layer TransformerEncoder training
#        on CPU, 20 profiled steps, made by shared/fixtures/pytorch/capture_pytorch_trace.py.
#    inputs.tsv lists name, bytes, events (non-empty, ph != "M"), all trace events; versions.txt the tool versions.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="$repo/.cache/trace-bench-venv"
xprof_venv="$repo/.cache/xprof-bench-venv"
out="$repo/.cache/trace-bench"
python="${PYTHON:-python3}"

TORCH_VERSION=2.15.0
HTA_VERSION=0.5.0
CAPTURE_SCRIPT="${CAPTURE_SCRIPT:-$repo/../shared/fixtures/pytorch/capture_pytorch_trace.py}"
PT_LAYERS="${PT_LAYERS:-12}"
PT_STEPS="${PT_STEPS:-20}"

export PIP_NO_CACHE_DIR=1
export PIP_DISABLE_PIP_VERSION_CHECK=1

have() { # package -> installed version (empty when absent)
    "$venv/bin/python" -c 'import sys
from importlib.metadata import version, PackageNotFoundError
try: print(version(sys.argv[1]))
except PackageNotFoundError: pass' "$1" 2>/dev/null || true
}

# --- 1. venv -------------------------------------------------------------------------------------------------
if [[ ! -x "$venv/bin/python" ]]; then
    echo "creating $venv with $("$python" --version 2>&1)" >&2
    mkdir -p "$repo/.cache"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --upgrade pip >&2
fi
torch_v="$(have torch)"
if [[ "${torch_v%%+*}" != "$TORCH_VERSION" ]]; then
    echo "installing torch==$TORCH_VERSION into $venv (CPU wheel index first, else PyPI)" >&2
    timeout 600 "$venv/bin/python" -m pip install --quiet --timeout 20 --retries 0 \
        --index-url https://download.pytorch.org/whl/cpu "torch==$TORCH_VERSION" >&2 2>/dev/null ||
        "$venv/bin/python" -m pip install --quiet "torch==$TORCH_VERSION" >&2
fi
if [[ "$(have holistictraceanalysis)" != "$HTA_VERSION" ]]; then
    echo "installing holistictraceanalysis==$HTA_VERSION into $venv" >&2
    "$venv/bin/python" -m pip install --quiet "holistictraceanalysis==$HTA_VERSION" >&2
fi
torch_v="$(have torch)"
[[ "${torch_v%%+*}" == "$TORCH_VERSION" && "$(have holistictraceanalysis)" == "$HTA_VERSION" ]] ||
    { echo "error: $venv lacks torch==$TORCH_VERSION / holistictraceanalysis==$HTA_VERSION" >&2; exit 1; }

mkdir -p "$out"

# Counts the events of a Chrome trace (JSON object with traceEvents, or a bare array), .json or .json.gz.
count_events() {
    "$venv/bin/python" - "$1" <<'PY'
import gzip, json, sys
p = sys.argv[1]
with (gzip.open(p, "rb") if p.endswith(".gz") else open(p, "rb")) as f:
    d = json.load(f)
ev = d["traceEvents"] if isinstance(d, dict) else d
print(sum(1 for e in ev if e and e.get("ph") != "M"), sum(1 for e in ev if e))
PY
}

finish_input() { # name: gzip copy + inputs.tsv row
    local f="$out/$1"
    [[ -s "$f.gz" && "$f.gz" -nt "$f" ]] || { echo "gzipping $1" >&2; gzip -6 -c "$f" >"$f.gz.tmp" && mv "$f.gz.tmp" "$f.gz"; }
    if ! grep -q "^$1	" "$out/inputs.tsv" 2>/dev/null; then
        read -r events all < <(count_events "$f")
        printf '%s\t%s\t%s\t%s\n' "$1" "$(stat -c %s "$f")" "$events" "$all" >>"$out/inputs.tsv"
    fi
}
[[ -f "$out/inputs.tsv" ]] || printf 'name\tbytes\tevents\tall_trace_events\n' >"$out/inputs.tsv"

# --- 2a. XProf trace_viewer JSON of the large JAX capture -------------------------------------------------------
a=xprof_vm.trace.json
if [[ ! -s "$out/$a" ]]; then
    xplane="${XPLANE:-$(ls -t "$repo"/.cache/capture-large-out/plugins/profile/*/vm.xplane.pb 2>/dev/null | head -1 || true)}"
    [[ -n "$xplane" && -f "$xplane" ]] || { echo "error: no large capture (.cache/capture-large-out/plugins/profile/*/vm.xplane.pb); see docs/PERFORMANCE.md" >&2; exit 1; }
    [[ -x "$xprof_venv/bin/python" ]] || { echo "error: run bash bench/xprof/setup.sh first (XProf 2.24.2)" >&2; exit 1; }
    echo "converting $xplane with XProf trace_viewer (a few minutes)" >&2
    tmp="$(mktemp -d)"
    cp "$xplane" "$tmp/vm.xplane.pb"
    "$xprof_venv/bin/python" - "$tmp/vm.xplane.pb" "$out/$a.tmp" <<'PY'
import sys, time
from xprof.convert import raw_to_tool_data as r
t = time.perf_counter()
data, ctype = r.xspace_to_tool_data([sys.argv[1]], "trace_viewer", {})
if data is None:
    sys.exit("XProf trace_viewer returned no data")
with open(sys.argv[2], "w") as f:
    f.write(data)
print(f"XProf trace_viewer: {len(data)} chars, {ctype}, {time.perf_counter() - t:.1f} s", file=sys.stderr)
PY
    rm -rf "$tmp"
    mv "$out/$a.tmp" "$out/$a"
    echo "source of $a: $xplane ($(stat -c %s "$xplane") bytes)" >"$out/$a.source"
fi
finish_input "$a"

# --- 2b. PyTorch profiler trace (CPU) ----------------------------------------------------------------------------
b=pytorch_tfm12.pt.trace.json
if [[ ! -s "$out/$b" ]]; then
    [[ -f "$CAPTURE_SCRIPT" ]] || { echo "error: $CAPTURE_SCRIPT not found (set CAPTURE_SCRIPT)" >&2; exit 1; }
    echo "capturing a PyTorch profiler trace: $PT_LAYERS layers, $PT_STEPS steps (a few minutes)" >&2
    tmp="$(mktemp -d)"
    (cd "$tmp" && "$venv/bin/python" "$CAPTURE_SCRIPT" "$PT_LAYERS" "$PT_STEPS" "$tmp/out" >&2)
    produced="$(ls "$tmp"/out/*.pt.trace.json* | head -1)"
    case "$produced" in
        *.gz) gzip -dc "$produced" >"$out/$b.tmp" ;;
        *) mv "$produced" "$out/$b.tmp" ;;
    esac
    rm -rf "$tmp"
    mv "$out/$b.tmp" "$out/$b"
    echo "source of $b: $(basename "$CAPTURE_SCRIPT") $PT_LAYERS $PT_STEPS, torch $(have torch)" >"$out/$b.source"
fi
finish_input "$b"

{
    echo "python $("$venv/bin/python" -c 'import platform; print(platform.python_version())')"
    for p in torch holistictraceanalysis pandas numpy; do echo "$p $(have "$p")"; done
    echo "xprof $("$xprof_venv/bin/python" -c 'from importlib.metadata import version; print(version("xprof"))' 2>/dev/null || echo absent)"
} >"$out/versions.txt"

column -t -s $'\t' "$out/inputs.tsv" >&2
echo "$out"
