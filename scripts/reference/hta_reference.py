#!/usr/bin/env python3
"""Reference outputs of Meta's Holistic Trace Analysis (HTA) for ONE torch.profiler trace.

Usage:
    python hta_reference.py TRACE(.json|.json.gz) OUT.json

Runs hta.trace_analysis.TraceAnalysis on the single trace (copied into a temporary
directory, as HTA loads a directory of per-rank traces; the trace is rank 0) and writes one
JSON file with:
  - get_temporal_breakdown()                     + the kernel window it used
  - get_idle_time_breakdown(show_idle_interval_stats=True) + per-stream windows
  - get_gpu_kernel_breakdown()                   + notes on where its numbers are wrong
  - get_cuda_kernel_launch_stats()               summarised
  - every failing HTA call: exception type, message and the HTA source line that raised
  - a diagnostic re-run with HTA's own switch HTA_DISABLE_NS_ROUNDING set, to show how much
    of HTA's result comes from its rounding of ns-resolution timestamps to whole µs.

Built for traceinsight==0.6.1 (HTA 0.6.1; PyPI name of HTA since 0.6.0). The numbers
this script computes itself (windows, corrected per-kernel stats, largest gaps) use only
the data frame HTA loaded (t.get_trace(rank)) and the raw trace file; the HTA rules they
describe are stated in the `*_rule` strings and in tests/data/h200/pytorch/README.md.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import math
import os
import platform
import shutil
import sys
import tempfile
import traceback
from typing import Any, Dict, List, Optional

import numpy as np
import pandas as pd

RANK = 0
# HTA's defaults, passed explicitly so the JSON records them.
CONSECUTIVE_KERNEL_DELAY = 30
RUNTIME_CUTOFF = 50
LAUNCH_DELAY_CUTOFF = 100
DURATION_RATIO = 0.8
NUM_KERNELS = 10
# Event categories HTA 0.6.1's BreakdownAnalysis.get_idle_time_breakdown keeps.
IDLE_KERNEL_CATS = ["kernel", "Kernel", "gpu_memset", "Memset", "gpu_memcpy", "Memcpy", "mtia_ccp_events"]

WINDOW_RULE_TEMPORAL = (
    "hta/analyzers/breakdown_analysis.py BreakdownAnalysis.get_temporal_breakdown -> "
    "_get_idle_time_for_kernels: per rank, every event of the loaded frame with stream != -1 "
    "(GPU kernels, gpu_memcpy, gpu_memset that survived Trace._filter_irrelevant_gpu_kernels) is merged "
    "(utils.merge_kernel_intervals); kernel_time = end of the last merged interval - start of the first "
    "= max(ts+dur) - min(ts) over those events, i.e. first GPU event start to last GPU event end of the "
    "rank, all streams together. idle_time = kernel_time - union of all GPU intervals; compute_time = "
    "union of COMPUTATION-type intervals (name not matching ComputeKernelGroupingPattern's exclusions: "
    "nccl/Memcpy/Memset/Sync/...); non_compute_time = kernel_time - compute_time - idle_time (asserted >= 0). "
    "The GPU events considered are only those whose launching CPU event (same correlation id) has "
    "ts < last_profiler_start, where last_profiler_start = max ts of all non-GPU events named "
    "ProfilerStep#N (common/trace.py Trace._filter_irrelevant_gpu_kernels, include_last_profiler_step=False "
    "by default); the gpu_user_annotation copy of the last ProfilerStep counts as such an event (stream -1), "
    "so the cut-off is the GPU-side start of the last step, which lets the first kernel(s) of the last "
    "step in. Timestamps are HTA's: trace ts rounded (ts -> ceil(ts), end -> floor(ts+dur), dur = end - ts, "
    "common/trace_parser.py round_down_time_stamps) and shifted by hta_min_ts (Trace._align_all_ranks)."
)
WINDOW_RULE_IDLE = (
    "hta/analyzers/breakdown_analysis.py BreakdownAnalysis.get_idle_time_breakdown / _analyze_idle_time_for_stream: "
    "per rank and per stream, the events with stream != -1 and cat in "
    + str(IDLE_KERNEL_CATS)
    + " (same filtered frame as the temporal breakdown) sorted by ts; each event's idle_interval = "
    "ts - end of the previous event on the stream (previous by ts, no running max), so the window is the "
    "first event start to the last event start (+ its dur) on that stream; the first event has no interval "
    "(NaN, dropped from sums; counted under 'other' only as NaN). Category: host_wait if the launching "
    "runtime event's START ts (joined through index_correlation) > previous event's end; else kernel_wait "
    "if idle_interval < consecutive_kernel_delay; else other. idle_time_ratio = category sum / stream sum. "
    "consecutive_kernel_delay is documented as nanoseconds but compared with idle_interval in trace "
    "microseconds, so the default 30 means 30 us."
)


# ----------------------------------------------------------------------------- helpers
def jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating, float)):
        v = float(x)
        if math.isnan(v) or math.isinf(v):
            return None
        return v
    if isinstance(x, (np.bool_,)):
        return bool(x)
    if x is pd.NA or x is pd.NaT:
        return None
    return x


def records(df: Optional[pd.DataFrame], index_name: Optional[str] = None) -> Optional[List[Dict[str, Any]]]:
    if df is None:
        return None
    d = df.copy()
    if index_name is not None:
        d.index.name = index_name
        d = d.reset_index()
    return jsonable(d.to_dict(orient="records"))


def failure(call: str, exc: BaseException) -> Dict[str, Any]:
    frames = traceback.extract_tb(exc.__traceback__)
    hta_frames = [f for f in frames if os.sep + "hta" + os.sep in f.filename]
    where = hta_frames[-1] if hta_frames else (frames[-1] if frames else None)
    loc = None
    if where is not None:
        fn = where.filename
        i = fn.rfind(os.sep + "hta" + os.sep)
        loc = {
            "file": fn[i + 1 :] if i >= 0 else os.path.basename(fn),
            "line": where.lineno,
            "function": where.name,
            "source": (where.line or "").strip(),
        }
    return {"call": call, "type": type(exc).__name__, "message": str(exc), "raised_at": loc}


def pct(v: float, total: float) -> Optional[float]:
    return None if not total else round(100.0 * v / total, 3)


def describe(s: pd.Series) -> Dict[str, Any]:
    s = s.dropna()
    if len(s) == 0:
        return {"count": 0}
    return jsonable(
        {
            "count": int(len(s)),
            "mean": float(s.mean()),
            "median": float(s.median()),
            "p90": float(s.quantile(0.9)),
            "min": float(s.min()),
            "max": float(s.max()),
            "sum": float(s.sum()),
        }
    )


def load_raw(path: str) -> Dict[str, Any]:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as fh:
        return json.load(fh)


def hta_versions() -> Dict[str, Any]:
    import hta.version as hv

    out = {
        "hta_version": getattr(hv, "__version__", None) or ".".join(map(str, hv.__version_tuple__)),
        "pandas": pd.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
    }
    try:
        from importlib.metadata import distribution

        for dist in ("traceinsight", "HolisticTraceAnalysis"):
            try:
                out["pypi_distribution"] = f"{dist}=={distribution(dist).version}"
                break
            except Exception:
                continue
    except Exception:
        pass
    return out


# ----------------------------------------------------------------------------- analysis
def build_analysis(trace_dir: str, disable_ns_rounding: bool):
    from hta.trace_analysis import TraceAnalysis

    # HTA's switch is the environment variable HTA_DISABLE_NS_ROUNDING; 0.6.x caches it in a
    # singleton (HTAEnvOptions), 0.5.0 reads the variable on every call.
    os.environ["HTA_DISABLE_NS_ROUNDING"] = "1" if disable_ns_rounding else "0"
    try:
        from hta.configs.env_options import HTAEnvOptions

        HTAEnvOptions.instance().set_disable_ns_rounding(disable_ns_rounding)
    except ImportError:
        pass
    return TraceAnalysis(trace_dir=trace_dir)


def kernel_frame(an) -> pd.DataFrame:
    """The rank's frame as HTA loaded it, GPU events only, names/cats decoded (a copy)."""
    df = an.t.get_trace(RANK)
    st = an.t.symbol_table.get_sym_table()
    k = df[df["stream"].ne(-1)].copy()
    k["s_name"] = k["name"].map(lambda i: st[i])
    k["s_cat"] = k["cat"].map(lambda i: st[i])
    k["end_"] = k["ts"] + k["dur"]
    return k


def window(ts_min: float, end_max: float, hta_min_ts: float, first_event_ts: float) -> Dict[str, Any]:
    def r(v: float) -> float:
        return round(float(v), 3)

    return {
        "start_hta_us": r(ts_min),
        "end_hta_us": r(end_max),
        "length_us": r(end_max - ts_min),
        "start_trace_us": r(ts_min + hta_min_ts),
        "end_trace_us": r(end_max + hta_min_ts),
        "start_rel_first_event_us": r(ts_min + hta_min_ts - first_event_ts),
        "end_rel_first_event_us": r(end_max + hta_min_ts - first_event_ts),
    }


def temporal_intermediates(an, k: pd.DataFrame) -> Dict[str, Any]:
    """The values get_temporal_breakdown had when its assertion fired, obtained by calling HTA's own
    helpers (BreakdownAnalysis._get_idle_time_for_kernels, utils.merge_kernel_intervals,
    utils.get_kernel_type) on the same events."""
    from hta.analyzers.breakdown_analysis import BreakdownAnalysis
    from hta.utils.utils import get_kernel_type, merge_kernel_intervals

    try:
        df = an.t.get_trace(RANK)
        gk = df[df["stream"].ne(-1)].copy()
        idle_time, kernel_time = BreakdownAnalysis._get_idle_time_for_kernels(gk.copy())
        st = an.t.symbol_table.get_sym_table()
        kt = gk["name"].map(lambda i: get_kernel_type(st[i]))
        comp = merge_kernel_intervals(gk[kt.eq("COMPUTATION")].copy())
        compute_time = comp["end"].sum() - comp["ts"].sum()
        busy = kernel_time - idle_time
        return jsonable(
            {
                "kernel_time_us": kernel_time,
                "idle_time_us": idle_time,
                "busy_time_all_gpu_events_us": busy,
                "compute_time_us": compute_time,
                "non_compute_time_us": kernel_time - compute_time - idle_time,
                "explanation": (
                    "non_compute_time = busy(all GPU events) - busy(COMPUTATION events). HTA's rounding "
                    "(ceil ts, floor end) gives sub-microsecond memsets/memcpys dur -1 or 0, so the merged "
                    "busy time of the non-compute events is negative and busy(all) < busy(compute): "
                    "the 'assert non_compute_time >= 0' in idle_time_per_rank fails and no result is returned."
                ),
            }
        )
    except Exception as e:  # noqa: BLE001
        return {"diagnosis_failed": failure("temporal_intermediates", e)}


def temporal(an, k: pd.DataFrame, ctx: Dict[str, Any], fails: List[Dict[str, Any]]) -> Dict[str, Any]:
    out: Dict[str, Any] = {
        "call": "TraceAnalysis.get_temporal_breakdown(visualize=False)",
        "unit": "us (trace microseconds after HTA's integer rounding; HTA's docstring says ns, its column names say us)",
        "window_rule": WINDOW_RULE_TEMPORAL,
    }
    try:
        out["result"] = records(an.get_temporal_breakdown(visualize=False))
    except Exception as e:  # noqa: BLE001
        f = failure("get_temporal_breakdown", e)
        fails.append(f)
        out["error"] = f
        out["error_diagnosis"] = temporal_intermediates(an, k)
    w = window(k["ts"].min(), k["end_"].max(), ctx["hta_min_ts_us"], ctx["first_event_ts_us"])
    first = k.loc[k["ts"].idxmin()]
    last = k.loc[k["end_"].idxmax()]
    w["first_event"] = {"name": first["s_name"][:120], "cat": first["s_cat"], "iteration": jsonable(first.get("iteration"))}
    w["last_event"] = {"name": last["s_name"][:120], "cat": last["s_cat"], "iteration": jsonable(last.get("iteration"))}
    if "iteration" in k.columns:
        w["gpu_events_per_iteration"] = {str(int(i)): int(n) for i, n in k.groupby("iteration").size().items()}
    w["gpu_event_count"] = int(len(k))
    out["window"] = w
    # Why a failure (if any): events whose rounded duration is < 0 or == 0, per HTA kernel type.
    from hta.utils.utils import get_kernel_type

    kt = k["s_name"].map(get_kernel_type)
    out["rounded_duration_check"] = {
        t: {
            "events": int((kt == t).sum()),
            "dur_lt_0": int(((kt == t) & (k["dur"] < 0)).sum()),
            "dur_eq_0": int(((kt == t) & (k["dur"] == 0)).sum()),
            "sum_dur_us": jsonable(k.loc[kt == t, "dur"].sum()),
        }
        for t in sorted(kt.unique())
    }
    return out


def idle(an, k: pd.DataFrame, ctx: Dict[str, Any], fails: List[Dict[str, Any]]) -> Dict[str, Any]:
    out: Dict[str, Any] = {
        "call": (
            f"TraceAnalysis.get_idle_time_breakdown(ranks=[0], visualize=False, show_idle_interval_stats=True, "
            f"consecutive_kernel_delay={CONSECUTIVE_KERNEL_DELAY})"
        ),
        "consecutive_kernel_delay": CONSECUTIVE_KERNEL_DELAY,
        "consecutive_kernel_delay_unit_note": (
            "HTA documents consecutive_kernel_delay in nanoseconds (trace_analysis.py "
            "get_idle_time_breakdown docstring: 'Default = 30 nanoseconds'; breakdown_analysis.py "
            "'Time is in ns') but compares it with idle_interval computed from trace ts/dur, which are "
            "microseconds: the effective threshold is 30 us."
        ),
        "unit": "us",
        "window_rule": WINDOW_RULE_IDLE,
    }
    try:
        res, stats = an.get_idle_time_breakdown(
            ranks=[RANK],
            visualize=False,
            show_idle_interval_stats=True,
            consecutive_kernel_delay=CONSECUTIVE_KERNEL_DELAY,
        )
        out["result"] = records(res.reset_index(drop=True))
        out["idle_interval_stats"] = records(stats, index_name="idle_category")
        # Summary per stream: share of each category in that stream's idle time.
        summ = {}
        for s, g in res.groupby("stream"):
            tot = float(g["idle_time"].sum())
            summ[str(s)] = {
                "idle_time_us": tot,
                **{f"{c}_us": float(v) for c, v in zip(g["idle_category"], g["idle_time"])},
                **{f"{c}_pct": pct(float(v), tot) for c, v in zip(g["idle_category"], g["idle_time"])},
            }
        out["summary_per_stream"] = jsonable(summ)
    except Exception as e:  # noqa: BLE001
        f = failure("get_idle_time_breakdown", e)
        fails.append(f)
        out["error"] = f
    # Windows per stream (same event set as HTA's idle breakdown).
    st_ids = an.t.symbol_table.get_sym_id_map()
    cats = {st_ids[c] for c in IDLE_KERNEL_CATS if c in st_ids}
    ki = k[k["cat"].isin(cats)].sort_values("ts")
    wins = {}
    for s, g in ki.groupby("stream"):
        w = window(g["ts"].min(), g["end_"].max(), ctx["hta_min_ts_us"], ctx["first_event_ts_us"])
        w["events"] = int(len(g))
        # Largest gaps (computed here from HTA's frame, not by HTA): where the idle time is.
        prev_end = g["end_"].shift(1)
        gap = g["ts"] - prev_end
        top = gap.nlargest(8)
        df_all = an.t.get_trace(RANK)
        rows = []
        for idx in top.index:
            ic = g.loc[idx, "index_correlation"] if "index_correlation" in g.columns else -1
            rt_ts = df_all.loc[ic, "ts"] if ic is not None and ic > 0 and ic in df_all.index else None
            rows.append(
                {
                    "gap_us": jsonable(gap[idx]),
                    "prev_end_hta_us": jsonable(prev_end[idx]),
                    "next_start_hta_us": jsonable(g.loc[idx, "ts"]),
                    "next_start_rel_first_event_us": round(float(g.loc[idx, "ts"] + ctx["hta_min_ts_us"] - ctx["first_event_ts_us"]), 3),
                    "next_launch_runtime_ts_hta_us": jsonable(rt_ts),
                    "launch_after_prev_end": (None if rt_ts is None else bool(rt_ts > prev_end[idx])),
                    "next_name": g.loc[idx, "s_name"][:80],
                    "next_iteration": jsonable(g.loc[idx, "iteration"]) if "iteration" in g.columns else None,
                }
            )
        w["largest_gaps_computed_here"] = rows
        wins[str(s)] = w
    out["window_per_stream"] = wins
    return out


def kernel_breakdown(an, k: pd.DataFrame, raw_dur: Dict[int, float], fails: List[Dict[str, Any]]) -> Dict[str, Any]:
    out: Dict[str, Any] = {
        "call": (
            f"TraceAnalysis.get_gpu_kernel_breakdown(visualize=False, duration_ratio={DURATION_RATIO}, "
            f"num_kernels={NUM_KERNELS}, include_memory_kernels=True)"
        ),
        "unit": "us",
    }
    try:
        kt, allk = an.get_gpu_kernel_breakdown(
            visualize=False, duration_ratio=DURATION_RATIO, num_kernels=NUM_KERNELS, include_memory_kernels=True
        )
        out["kernel_type_shares"] = records(kt)
        out["per_kernel_table_as_hta_gives_it"] = records(allk)
        out["per_kernel_table_columns"] = list(map(str, allk.columns))
    except Exception as e:  # noqa: BLE001
        f = failure("get_gpu_kernel_breakdown", e)
        fails.append(f)
        out["error"] = f
    from hta.utils.utils import get_kernel_type

    kk = k.copy()
    kk["kernel_type"] = kk["s_name"].map(get_kernel_type)
    kk["raw_dur"] = kk["correlation"].map(raw_dur)
    g = kk.groupby(["kernel_type", "s_name"])
    corr = pd.DataFrame(
        {
            "count": g.size(),
            "sum_rounded": g["dur"].sum(),
            "mean_rounded": g["dur"].mean(),
            "min_rounded": g["dur"].min(),
            "max_rounded": g["dur"].max(),
            "sum_raw": g["raw_dur"].sum(),
            "mean_raw": g["raw_dur"].mean(),
            "min_raw": g["raw_dur"].min(),
            "max_raw": g["raw_dur"].max(),
        }
    ).reset_index().rename(columns={"s_name": "name"})
    corr = corr.sort_values(["kernel_type", "sum_raw"], ascending=[True, False]).round(4)
    out["per_kernel_table_corrected_computed_here"] = {
        "note": (
            "Not HTA output: the same GPU events HTA kept (its filtered frame), grouped by full kernel name. "
            "*_rounded use HTA's durations (after its ceil(ts)/floor(end) rounding), *_raw use the trace's own "
            "dur for the same correlation ids."
        ),
        "rows": records(corr),
    }
    neg = kk[kk["dur"] < 0]
    out["hta_errors"] = {
        "min_max_mean_equal_sum_std_zero": (
            "In BreakdownAnalysis._aggr_gpu_kernel_time, once a kernel type has more than num_kernels distinct "
            "names, the table is re-aggregated by name from the already aggregated 'sum' column "
            "(groupby(name)['sum'].agg(sum,max,min,mean,std)): every named (non-'others') row then has "
            "max = min = mean = sum and std = NaN -> 0, i.e. it reads as one occurrence whose duration is the "
            "total; there is no count column at all. The 'others' row's max/min/mean/std are statistics of "
            "per-name totals, not of kernel instances. Kernel types with <= num_kernels names (e.g. MEMORY "
            "here) keep true per-instance max/min/mean/std."
        ),
        "negative_values": (
            "common/trace_parser.py round_down_time_stamps rounds ns-resolution float timestamps with "
            "ts -> ceil(ts), end -> floor(ts + dur), dur = end - ts: every event loses up to 2 us, and any event "
            "shorter than ~1 us whose start and end fall in the same or adjacent microsecond gets dur = -1 or 0. "
            "Sums, means and minima of short kernels (memsets, philox unpack, small cub/elementwise kernels) "
            "therefore come out negative or too small; the same rounded durations feed every other HTA result."
        ),
        "events_with_negative_rounded_dur": int(len(neg)),
        "events_with_zero_rounded_dur": int((kk["dur"] == 0).sum()),
        "events_total": int(len(kk)),
        "rounded_minus_raw_total_us": jsonable(kk["dur"].sum() - kk["raw_dur"].sum()),
        "names_with_negative_rounded_sum": sorted(
            corr.loc[corr["sum_rounded"] < 0, "name"].map(lambda s: s[:100]).tolist()
        ),
    }
    return out


def launch_stats(an, fails: List[Dict[str, Any]]) -> Dict[str, Any]:
    out: Dict[str, Any] = {
        "call": (
            f"TraceAnalysis.get_cuda_kernel_launch_stats(ranks=[0], runtime_cutoff={RUNTIME_CUTOFF}, "
            f"launch_delay_cutoff={LAUNCH_DELAY_CUTOFF}, include_memory_events=True, visualize=False)"
        ),
        "unit": "us",
        "rule": (
            "hta/analyzers/cuda_kernel_analysis.py CudaKernelAnalysis.cuda_kernel_launch_stats: joins CPU events "
            "named cudaLaunchKernel, cudaLaunchKernelExC (+ cudaMemcpyAsync, cudaMemsetAsync) with the GPU event "
            "of the same correlation id; launch_delay = gpu.ts - cpu.ts - cpu.dur, clipped at 0. Driver-API "
            "launches (cuLaunchKernel, cuLaunchKernelEx: Triton, cuDNN/cuBLAS-Lt paths) are not included. "
            "Thresholds as in visualize_cuda_launch_kernel_info: short GPU kernel = cpu_duration <= runtime_cutoff "
            "and gpu_duration < cpu_duration; runtime outlier = cpu_duration > runtime_cutoff; long launch delay "
            "= launch_delay > launch_delay_cutoff."
        ),
        "runtime_cutoff_us": RUNTIME_CUTOFF,
        "launch_delay_cutoff_us": LAUNCH_DELAY_CUTOFF,
    }
    try:
        r = an.get_cuda_kernel_launch_stats(
            ranks=[RANK],
            runtime_cutoff=RUNTIME_CUTOFF,
            launch_delay_cutoff=LAUNCH_DELAY_CUTOFF,
            include_memory_events=True,
            visualize=False,
        )[RANK]
        out["summary"] = {
            "pairs": int(len(r)),
            "launch_delay": describe(r["launch_delay"]),
            "cpu_duration": describe(r["cpu_duration"]),
            "gpu_duration": describe(r["gpu_duration"]),
            "launch_delay_clipped_to_zero_or_zero": int((r["launch_delay"] == 0).sum()),
            "gpu_duration_negative_after_rounding": int((r["gpu_duration"] < 0).sum()),
            "short_gpu_kernels": int(((r["cpu_duration"] <= RUNTIME_CUTOFF) & (r["gpu_duration"] < r["cpu_duration"])).sum()),
            "runtime_outliers": int((r["cpu_duration"] > RUNTIME_CUTOFF).sum()),
            "long_launch_delay": int((r["launch_delay"] > LAUNCH_DELAY_CUTOFF).sum()),
        }
        df = an.t.get_trace(RANK)
        st = an.t.symbol_table.get_sym_table()
        names = df.loc[df["stream"].eq(-1) & df["correlation"].ge(0), "name"].map(lambda i: st[i])
        out["cpu_launch_events_in_filtered_frame_by_name"] = {str(a): int(b) for a, b in names.value_counts().items()}
    except Exception as e:  # noqa: BLE001
        f = failure("get_cuda_kernel_launch_stats", e)
        fails.append(f)
        out["error"] = f
    return out


def diagnostic_no_rounding(trace_dir: str, ctx: Dict[str, Any]) -> Dict[str, Any]:
    out: Dict[str, Any] = {
        "note": (
            "Same calls with HTA's own option HTA_DISABLE_NS_ROUNDING (HTAEnvOptions.set_disable_ns_rounding(True)): "
            "float us timestamps kept, no ceil/floor. Shows how much of the default result is rounding."
        ),
        "failures": [],
    }
    try:
        an = build_analysis(trace_dir, disable_ns_rounding=True)
    except Exception as e:  # noqa: BLE001
        out["failures"].append(failure("TraceAnalysis(trace_dir) [no rounding]", e))
        return out
    try:
        out["temporal_breakdown"] = records(an.get_temporal_breakdown(visualize=False))
    except Exception as e:  # noqa: BLE001
        out["failures"].append(failure("get_temporal_breakdown [no rounding]", e))
    try:
        res, _ = an.get_idle_time_breakdown(ranks=[RANK], visualize=False, consecutive_kernel_delay=CONSECUTIVE_KERNEL_DELAY)
        out["idle_time_breakdown"] = records(res.reset_index(drop=True))
    except Exception as e:  # noqa: BLE001
        out["failures"].append(failure("get_idle_time_breakdown [no rounding]", e))
    k = kernel_frame(an)
    out["window"] = window(k["ts"].min(), k["end_"].max(), an.t.min_ts, ctx["first_event_ts_us"])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace", help="torch.profiler Chrome trace (.json or .json.gz)")
    ap.add_argument("out", help="output JSON path")
    args = ap.parse_args()

    trace_path = os.path.abspath(args.trace)
    with open(trace_path, "rb") as fh:
        sha = hashlib.sha256(fh.read()).hexdigest()
    raw = load_raw(trace_path)
    evs = raw["traceEvents"]
    first_event_ts = min(float(e["ts"]) for e in evs if "ts" in e)
    raw_dur = {}
    for e in evs:
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            c = (e.get("args") or {}).get("correlation")
            if c is not None:
                raw_dur[int(c)] = float(e["dur"])

    result: Dict[str, Any] = {"tool": hta_versions(), "failures": []}
    fails: List[Dict[str, Any]] = result["failures"]

    tmp = tempfile.mkdtemp(prefix="hta_ref_")
    try:
        # HTA reads a directory of rank traces; it accepts names ending .json or .gz (gzip handled by HTA).
        base = os.path.basename(trace_path)
        if not (base.endswith(".json") or base.endswith(".gz")):
            base += ".json"
        trace_dir = os.path.join(tmp, "traces")
        os.makedirs(trace_dir)
        shutil.copyfile(trace_path, os.path.join(trace_dir, base))

        try:
            an = build_analysis(trace_dir, disable_ns_rounding=False)
        except Exception as e:  # noqa: BLE001
            fails.append(failure("TraceAnalysis(trace_dir)", e))
            an = None

        ctx = {
            "file": os.path.basename(trace_path),
            "sha256": sha,
            "rank": RANK,
            "rank_note": "no distributedInfo in the trace: HTA defaults it to rank 0",
            "include_last_profiler_step": False,
            "first_event_ts_us": first_event_ts,
            "first_event_ts_rule": "min ts over all traceEvents of the file (any ph/cat), trace microseconds",
            "hta_min_ts_us": None,
            "hta_min_ts_rule": (
                "common/trace.py Trace._align_all_ranks: min of HTA's rounded ts over the events it parsed "
                "(rows with dur and cat, cat != 'Trace'; ph M/s/f/i dropped), subtracted from every ts. "
                "All *_hta_us values are relative to it; *_trace_us = hta + hta_min_ts_us."
            ),
            "ts_rounding": (
                "common/trace_parser.py round_down_time_stamps (float ts only; default on): ts -> ceil(ts), "
                "end -> floor(ts + dur), dur = end - ts, in trace microseconds."
            ),
        }
        result["trace"] = ctx
        if an is not None:
            ctx["hta_min_ts_us"] = jsonable(an.t.min_ts)
            k = kernel_frame(an)
            result["temporal_breakdown"] = temporal(an, k, ctx, fails)
            result["idle_time_breakdown"] = idle(an, k, ctx, fails)
            result["gpu_kernel_breakdown"] = kernel_breakdown(an, k, raw_dur, fails)
            result["cuda_kernel_launch_stats"] = launch_stats(an, fails)
            result["diagnostic_ns_rounding_disabled"] = diagnostic_no_rounding(trace_dir, ctx)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    with open(args.out, "w") as fh:
        json.dump(jsonable(result), fh, indent=1, sort_keys=False)
        fh.write("\n")
    print(f"wrote {args.out}; failures: {[f['call'] + ': ' + f['type'] for f in fails] or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
