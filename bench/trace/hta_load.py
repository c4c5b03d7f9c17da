"""Loads one Chrome/PyTorch-profiler trace with HTA (Meta's Holistic Trace Analysis) and runs its temporal
breakdown, communication/computation overlap and idle time breakdown: the HTA side of bench/trace/run.sh.

    .cache/trace-bench-venv/bin/python bench/trace/hta_load.py TRACE.json[.gz]

HTA takes a map rank -> trace file (or a directory of per-rank traces, which it scans line by line for a
`"rank": N` key); the file is passed as rank 0 directly, so no directory scan is timed. HTA requires the
name to end in `.json` or `.gz`. Every analysis runs with visualize=False, and a failure of one is caught
and reported (HTA's breakdowns need GPU kernels: on CPU-only traces they fail, which is a finding, not a bug
of this script).

Prints one JSON object on stdout: the load and per-analysis seconds, the event count HTA kept, and each
analysis' outcome ("ok" or "failed: <exception>"); the last line is `OUTCOME: ...`, which run.sh reads.
Exits 0 when the trace loaded (whatever the analyses did), 1 when loading failed.
"""

import json
import logging
import os
import sys
import time
import traceback


def short(exc: BaseException) -> str:
    msg = f"{type(exc).__name__}: {exc}".replace("\n", " ").strip()
    return msg if len(msg) <= 300 else msg[:297] + "..."


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    path = os.path.abspath(sys.argv[1])
    report = {"trace": path, "bytes": os.path.getsize(path)}
    logging.getLogger().setLevel(logging.ERROR)

    t0 = time.perf_counter()
    from hta.trace_analysis import TraceAnalysis  # noqa: E402  (import time is part of the tool's cost)

    report["import_s"] = round(time.perf_counter() - t0, 3)
    t1 = time.perf_counter()
    try:
        analyzer = TraceAnalysis(trace_files={0: path}, trace_dir=os.path.dirname(path))
    except BaseException as exc:  # noqa: BLE001 - report anything, including SystemExit from HTA
        report["load"] = "failed: " + short(exc)
        report["load_traceback"] = traceback.format_exc(limit=4)
        print(json.dumps(report, indent=1))
        print(f"OUTCOME: failed: load: {short(exc)}")
        return 1
    report["load_s"] = round(time.perf_counter() - t1, 3)
    report["load"] = "ok"
    try:
        report["events"] = int(len(analyzer.t.get_trace(0)))
    except Exception as exc:  # noqa: BLE001
        report["events"] = "unknown: " + short(exc)

    analyses = {
        "temporal_breakdown": lambda: analyzer.get_temporal_breakdown(visualize=False),
        "comm_comp_overlap": lambda: analyzer.get_comm_comp_overlap(visualize=False),
        "idle_time_breakdown": lambda: analyzer.get_idle_time_breakdown(ranks=[0], visualize=False),
    }
    failed = []
    for name, fn in analyses.items():
        t = time.perf_counter()
        try:
            result = fn()
            frame = result[0] if isinstance(result, tuple) else result
            rows = None if frame is None else int(len(frame))
            report[name] = "ok" if rows else f"ok (empty: {rows} rows)"
            report[name + "_rows"] = rows
            if frame is not None and rows is not None and rows <= 4:
                report[name + "_result"] = json.loads(frame.to_json(orient="records"))
        except BaseException as exc:  # noqa: BLE001
            report[name] = "failed: " + short(exc)
            failed.append(f"{name}: {short(exc)}")
        report[name + "_s"] = round(time.perf_counter() - t, 3)
    report["total_s"] = round(time.perf_counter() - t0, 3)

    print(json.dumps(report, indent=1))
    if failed:
        print("OUTCOME: loaded; " + "; ".join(f"failed {f}" for f in failed))
    else:
        empty = [n for n in analyses if report[n] != "ok"]
        print("OUTCOME: ok" + (f" (empty: {', '.join(empty)})" if empty else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
