"""What Meta's HolisticTraceAnalysis (HTA) says about a multi-rank PyTorch run, beside reference.py's answers.

    .cache/hta-venv/bin/python examples/multihost/hta_reference.py RUN_DIR [--out RUN_DIR/hta.json]

RUN_DIR holds one PyTorch profiler (Kineto) chrome trace per rank, *.pt.trace.json[.gz], each with
`distributedInfo.rank`. The venv: `python3 -m venv .cache/hta-venv && .cache/hta-venv/bin/pip install -r
examples/multihost/hta-requirements.txt`.

Only HTA's own analyses are run; nothing here recomputes what HTA computes. Per rank, hta.json records:

- `comm_comp_overlap_pctg` — `TraceAnalysis.get_comm_comp_overlap`: the share of the rank's (merged) communication
  kernel time during which a computation kernel also ran, in %.
- `temporal_breakdown` — `get_temporal_breakdown`: the GPU's time from its first kernel to its last
  (`kernel_time_us`) split into idle, compute (computation kernels) and non-compute (communication and memory
  kernels not overlapped by computation) time.
- `communication_kernels` — `get_gpu_kernel_breakdown` (every kernel kept: `num_kernels` large,
  `duration_ratio` 1): the rank's NCCL kernels by name, their summed/min/max/mean duration, and their total.
- `straggler_metric` — the per-rank number behind `get_potential_stragglers`: HTA's default
  (`find_stragglers_with_late_start_comm_kernels`) keeps communication kernels (names starting `ncclKernel`)
  lasting at least 1 % of the mean iteration time, takes the LAST such kernel per (rank, stream, iteration, kernel
  name), picks the (stream, name) whose duration varies most across ranks, and ranks the ranks by that kernel's
  start, normalized: (ts − earliest ts of the run) / mean iteration time. The latest starters are the potential
  stragglers. Recorded here: that kernel's name, stream, absolute start and duration, and the normalized start.
  The metric is taken by running HTA's own two steps (`_compute_normalized_start_time_of_significant_comm_kernels`,
  `_get_top_k_stragglers_with_metric`) through `get_potential_stragglers`' `straggler_identification_impl`
  hook, and checked to give the same answer as HTA's default.

and for the run: `potential_stragglers` for 1 and for HTA's default 2 candidates, the profiler steps HTA found,
and the kernel-type breakdown over all ranks. HTA shifts every rank's times by the run's earliest `ts`
(`time_origin_us`); times here are put back to absolute µs (the traces' own clock) where they are times.
"""

import argparse
import glob
import gzip
import importlib.metadata
import json
import os
import re
import sys


def to_py(x):
    """numpy / pandas scalars to plain JSON numbers (integral floats stay floats)."""
    if hasattr(x, "item"):
        x = x.item()
    return x


def trace_files(run_dir):
    files = sorted(glob.glob(os.path.join(run_dir, "*.pt.trace.json.gz")) + glob.glob(os.path.join(run_dir, "*.pt.trace.json")))
    by_rank = {}
    for f in files:
        opener = gzip.open if f.endswith(".gz") else open
        with opener(f, "rt") as fh:
            info = json.load(fh).get("distributedInfo") or {}
        if "rank" not in info:
            sys.exit(f"{f}: no distributedInfo.rank")
        r = int(info["rank"])
        if r in by_rank:
            sys.exit(f"{run_dir}: two traces of rank {r}")
        by_rank[r] = f
    if len(by_rank) < 2:
        sys.exit(f"{run_dir}: {len(by_rank)} rank trace(s); HTA's multi-rank analyses need two or more")
    return dict(sorted(by_rank.items()))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run_dir")
    ap.add_argument("--out", help="default RUN_DIR/hta.json")
    a = ap.parse_args()

    from hta.analyzers import straggler as hta_straggler
    from hta.trace_analysis import TraceAnalysis

    files = trace_files(a.run_dir)
    # include_last_profiler_step: HTA drops the GPU kernels of the last ProfilerStep by default (an incomplete
    # iteration in long captures); with one step only it filters nothing either way, but keep the runs' steps whole.
    ta = TraceAnalysis(trace_files=dict(files), trace_dir=a.run_dir, include_last_profiler_step=True)
    t0 = int(to_py(ta.t.min_ts))  # HTA's shift: every ts below is ts - t0
    sym = ta.t.symbol_table.get_sym_table()
    host = {r: f"rank-{r}" for r in files}

    per = {host[r]: {} for r in files}

    overlap = ta.get_comm_comp_overlap(visualize=False)
    for _, row in overlap.iterrows():
        per[host[int(row["rank"])]]["comm_comp_overlap_pctg"] = to_py(row["comp_comm_overlap_pctg"])

    tb = ta.get_temporal_breakdown(visualize=False)
    for _, row in tb.iterrows():
        per[host[int(row["rank"])]]["temporal_breakdown"] = {
            "idle_time_us": to_py(row["idle_time(us)"]),
            "compute_time_us": to_py(row["compute_time(us)"]),
            "non_compute_time_us": to_py(row["non_compute_time(us)"]),
            "kernel_time_us": to_py(row["kernel_time(us)"]),
            "idle_time_pctg": to_py(row["idle_time_pctg"]),
            "compute_time_pctg": to_py(row["compute_time_pctg"]),
            "non_compute_time_pctg": to_py(row["non_compute_time_pctg"]),
        }

    kernel_types, kernels = ta.get_gpu_kernel_breakdown(visualize=False, duration_ratio=1.0, num_kernels=10**9)
    comm = kernels[kernels["kernel_type"].eq("COMMUNICATION")]
    for r in files:
        rows = comm[comm["rank"].eq(r)].sort_values("name")
        per[host[r]]["communication_kernels"] = {
            "total_us": to_py(rows["sum (us)"].sum()),
            "by_name": [
                {"name": row["name"], "count": int(round(row["sum (us)"] / row["mean (us)"])) if row["mean (us)"] else 0,
                 "sum_us": to_py(row["sum (us)"]), "min_us": to_py(row["min (us)"]), "max_us": to_py(row["max (us)"]),
                 "mean_us": to_py(row["mean (us)"])}
                for _, row in rows.iterrows()
            ],
        }

    steps = [int(to_py(s)) for s in ta.get_profiler_steps()]
    captured = []

    def late_start_capturing(df, symbol_table, n_stragglers=2, visualize=False):
        # HTA's find_stragglers_with_late_start_comm_kernels, step by step, keeping its metric.
        metric_df, metric_name = hta_straggler._compute_normalized_start_time_of_significant_comm_kernels(
            df, symbol_table, visualize)
        captured.append((metric_df.copy(), metric_name))
        return hta_straggler._get_top_k_stragglers_with_metric(
            metric_df, metric_name, visualize=visualize, n_stragglers=n_stragglers)

    stragglers = {}
    for k in (1, 2):
        got = [int(to_py(r)) for r in ta.get_potential_stragglers(num_candidates=k, visualize=False,
                                                                  straggler_identification_impl=late_start_capturing)]
        default = [int(to_py(r)) for r in ta.get_potential_stragglers(num_candidates=k, visualize=False)]
        if got != default:
            sys.exit(f"num_candidates={k}: the capturing impl gave {got}, HTA's default {default}")
        stragglers[f"num_candidates={k}"] = [host[r] for r in got]
    metric_df, metric_name = captured[-1]
    for _, row in metric_df.sort_values(["rank", "iteration"]).iterrows():
        per[host[int(row["rank"])]].setdefault("straggler_metric", []).append({
            "iteration": int(to_py(row["iteration"])),
            "kernel": sym[int(to_py(row["name"]))],
            "stream": int(to_py(row["stream"])),
            "ts_us": t0 + int(to_py(row["ts"])),
            "dur_us": to_py(row["dur"]),
            metric_name: to_py(row[metric_name]),
        })

    out = {
        "tool": "HolisticTraceAnalysis",
        "hta_version": importlib.metadata.version("HolisticTraceAnalysis"),
        "trace_files": {host[r]: os.path.basename(f) for r, f in files.items()},
        "include_last_profiler_step": True,
        "time_origin_us": t0,
        "profiler_steps": steps,
        "potential_stragglers": stragglers,
        "kernel_type_breakdown": [
            {"kernel_type": row["kernel_type"], "sum_us": to_py(row["sum"]), "percentage": to_py(row["percentage"])}
            for _, row in kernel_types.iterrows()
        ],
        "per_rank": per,
    }
    path = a.out or os.path.join(a.run_dir, "hta.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"{a.run_dir}: HTA {out['hta_version']}: potential stragglers {stragglers}", file=sys.stderr)
    for h, p in per.items():
        tb = p["temporal_breakdown"]
        sm = p.get("straggler_metric", [{}])[-1]
        print(f"  {h}: overlap {p['comm_comp_overlap_pctg']}%, idle {tb['idle_time_us']} / compute {tb['compute_time_us']}"
              f" / non-compute {tb['non_compute_time_us']} µs, comm kernels {p['communication_kernels']['total_us']} µs,"
              f" straggler metric {sm.get(metric_name)}", file=sys.stderr)


if __name__ == "__main__":
    main()
