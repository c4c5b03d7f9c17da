#!/usr/bin/env python3
"""Make a "slow input pipeline" trace from a torch.profiler Chrome trace.

Usage:
    python make_sleep_trace.py IN.pt.trace.json.gz OUT.pt.trace.json.gz [--gap-us 30000]

In every ProfilerStep#N (host user_annotation) a gap of --gap-us microseconds is inserted at an
insertion point P_N, as an untraced `time.sleep()` in the input function would produce:
every event (any ph: X, s, f, i, M, ...; host and device) whose ts >= P_N moves by +gap, and every
duration event that straddles P_N (ts < P_N < ts + dur: the ProfilerStep itself and the profiler's
own "Trace" span) grows by +gap. Nothing else changes: the output is the input text with only those
"ts"/"dur" numbers rewritten (exact decimal arithmetic, same number of decimals), gzip-compressed.

Insertion point per step:
  1. the step's host-to-device input copy: the first cudaMemcpyAsync inside the step whose
     correlated gpu_memcpy is HtoD; else
  2. the step's first kernel launch: the first cuda_runtime/cuda_driver call inside the step that
     has a correlated GPU event (kernel / gpu_memcpy / gpu_memset).
  P_N is the start of the OUTERMOST host op on the launching thread that encloses that call and
  lies inside the step (so that the gap falls between two top-level ops, not inside an aten op);
  the script checks that at P_N only the ProfilerStep and the "Trace" span straddle P_N and that
  no device event runs across P_N (the device is idle during the gap).
"""

from __future__ import annotations

import argparse
import bisect
import gzip
import json
import re
import sys
from decimal import Decimal
from typing import Any, Dict, List, Tuple

GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
LAUNCH_CATS = ("cuda_runtime", "cuda_driver")
NUM = r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
TS_RE = re.compile(r'("ts"\s*:\s*)(' + NUM + ")")
DUR_RE = re.compile(r'("dur"\s*:\s*)(' + NUM + ")")


def event_spans(text: str) -> List[Tuple[int, int, Dict[str, Any]]]:
    """(start, end, event) of every element of the traceEvents array, positions in `text`."""
    m = re.search(r'"traceEvents"\s*:\s*\[', text)
    if not m:
        raise SystemExit("no traceEvents array")
    dec = json.JSONDecoder(parse_float=Decimal)
    pos = m.end()
    out = []
    n = len(text)
    while True:
        while pos < n and text[pos] in " \t\r\n,":
            pos += 1
        if text[pos] == "]":
            break
        obj, end = dec.raw_decode(text, pos)
        out.append((pos, end, obj))
        pos = end
    return out


def choose_points(evs: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    X = [e for e in evs if e.get("ph") == "X" and "dur" in e]
    gpu_by_corr = {}
    for e in X:
        if e.get("cat") in GPU_CATS:
            c = (e.get("args") or {}).get("correlation")
            if c is not None:
                gpu_by_corr[c] = e
    steps = sorted(
        (e for e in X if e.get("cat") == "user_annotation" and str(e.get("name", "")).startswith("ProfilerStep#")),
        key=lambda e: e["ts"],
    )
    points = []
    for s in steps:
        a, b = s["ts"], s["ts"] + s["dur"]
        launches = sorted(
            (
                e
                for e in X
                if e.get("cat") in LAUNCH_CATS
                and a <= e["ts"] < b
                and (e.get("args") or {}).get("correlation") in gpu_by_corr
            ),
            key=lambda e: e["ts"],
        )
        htod = [
            e
            for e in launches
            if e["name"] == "cudaMemcpyAsync" and "HtoD" in gpu_by_corr[e["args"]["correlation"]]["name"]
        ]
        rule = "htod_input_copy" if htod else "first_kernel_launch (no HtoD cudaMemcpyAsync in the step)"
        launch = htod[0] if htod else launches[0]
        gpu = gpu_by_corr[launch["args"]["correlation"]]
        # Outermost host op on the same thread that encloses the launch and lies inside the step.
        encl = [
            e
            for e in X
            if e.get("pid") == launch["pid"]
            and e.get("tid") == launch["tid"]
            and e is not s
            and e.get("cat") in ("cpu_op", "user_annotation", "python_function")
            and e["ts"] <= launch["ts"] < e["ts"] + e["dur"]
            and a <= e["ts"]
            and e["ts"] + e["dur"] <= b
        ]
        anchor = min(encl, key=lambda e: (e["ts"], -e["dur"])) if encl else launch
        points.append(
            {
                "step": s["name"],
                "step_ts": s["ts"],
                "rule": rule,
                "launch": {"name": launch["name"], "cat": launch["cat"], "ts": launch["ts"], "correlation": launch["args"]["correlation"]},
                "gpu_event": {"name": gpu["name"], "cat": gpu["cat"], "ts": gpu["ts"]},
                "anchor_op": {"name": anchor["name"], "cat": anchor.get("cat"), "ts": anchor["ts"]},
                "P": anchor["ts"],
            }
        )
    return points


def check_points(evs: List[Dict[str, Any]], points: List[Dict[str, Any]]) -> None:
    X = [e for e in evs if e.get("ph") == "X" and "dur" in e]
    for p in points:
        P = p["P"]
        straddle = [e for e in X if e["ts"] < P < e["ts"] + e["dur"]]
        names = sorted({f'{e.get("cat")}:{e.get("name")}' for e in straddle})
        p["straddling_events"] = names
        bad = [n for n in names if not (n == f"user_annotation:{p['step']}" or n.startswith("Trace:"))]
        if bad:
            raise SystemExit(f"{p['step']}: events other than the step run across P={P}: {bad}")
        dev_prev = [e for e in X if e.get("cat") in GPU_CATS and e["ts"] < P]
        last_end = max((e["ts"] + e["dur"] for e in dev_prev), default=None)
        p["device_last_end_before_P"] = last_end
        if last_end is not None and last_end > P:
            raise SystemExit(f"{p['step']}: a device event runs across P={P}")


def shift_text(text: str, spans, points: List[Dict[str, Any]], gap: Decimal) -> Tuple[str, Dict[str, int]]:
    Ps = sorted(p["P"] for p in points)
    out = []
    last = 0
    stats = {"events": 0, "ts_shifted": 0, "dur_grown": 0}
    for start, end, ev in spans:
        stats["events"] += 1
        if "ts" not in ev:
            continue
        ts = ev["ts"]
        n_before = bisect.bisect_right(Ps, ts)  # P <= ts
        grow = 0
        if "dur" in ev:
            e_end = ts + ev["dur"]
            grow = bisect.bisect_left(Ps, e_end) - bisect.bisect_right(Ps, ts)  # ts < P < end
        if n_before == 0 and grow == 0:
            continue
        chunk = text[start:end]
        # Only the event's own top-level "ts"/"dur" keys (Kineto writes them once, never inside args).
        if len(TS_RE.findall(chunk)) != 1 or len(DUR_RE.findall(chunk)) > 1:
            raise SystemExit(f"unexpected ts/dur layout in event at {start}")
        if n_before:
            chunk = TS_RE.sub(lambda m: m.group(1) + str(Decimal(m.group(2)) + gap * n_before), chunk, count=1)
            stats["ts_shifted"] += 1
        if grow:
            chunk = DUR_RE.sub(lambda m: m.group(1) + str(Decimal(m.group(2)) + gap * grow), chunk, count=1)
            stats["dur_grown"] += 1
        out.append(text[last:start])
        out.append(chunk)
        last = end
    out.append(text[last:])
    return "".join(out), stats


def verify(orig_evs, new_text: str, points, gap: Decimal) -> None:
    new = json.loads(new_text, parse_float=Decimal)
    new_evs = new["traceEvents"]
    assert len(new_evs) == len(orig_evs)
    Ps = sorted(p["P"] for p in points)
    for o, n in zip(orig_evs, new_evs):
        ok = {k: v for k, v in o.items() if k not in ("ts", "dur")}
        nk = {k: v for k, v in n.items() if k not in ("ts", "dur")}
        assert ok == nk, (o, n)
        if "ts" in o:
            k = bisect.bisect_right(Ps, o["ts"])
            assert n["ts"] == o["ts"] + gap * k
        if "dur" in o:
            g = bisect.bisect_left(Ps, o["ts"] + o["dur"]) - bisect.bisect_right(Ps, o["ts"])
            assert n["dur"] == o["dur"] + gap * g


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inp")
    ap.add_argument("out")
    ap.add_argument("--gap-us", type=int, default=30000)
    args = ap.parse_args()
    gap = Decimal(args.gap_us)

    opener = gzip.open if args.inp.endswith(".gz") else open
    with opener(args.inp, "rt", encoding="utf-8") as fh:
        text = fh.read()
    spans = event_spans(text)
    evs = [e for _, _, e in spans]
    first_ts = min(e["ts"] for e in evs if "ts" in e)
    points = choose_points(evs)
    check_points(evs, points)
    new_text, stats = shift_text(text, spans, points, gap)
    verify(evs, new_text, points, gap)
    with open(args.out, "wb") as fh:
        fh.write(gzip.compress(new_text.encode("utf-8"), mtime=0))

    report = {
        "input": args.inp,
        "output": args.out,
        "gap_us": args.gap_us,
        "first_event_ts_us": str(first_ts),
        "stats": stats,
        "insertions": [
            {
                "step": p["step"],
                "rule": p["rule"],
                "P_trace_us": str(p["P"]),
                "P_rel_first_event_us": str(p["P"] - first_ts),
                "P_minus_step_start_us": str(p["P"] - p["step_ts"]),
                "anchor_op": p["anchor_op"]["name"],
                "launch": f'{p["launch"]["name"]} ({p["launch"]["cat"]}, correlation {p["launch"]["correlation"]}, '
                f'+{p["launch"]["ts"] - p["P"]} us after P)',
                "gpu_event": f'{p["gpu_event"]["cat"]}: {p["gpu_event"]["name"][:90]}',
                "device_last_end_before_P_rel_us": (
                    None if p["device_last_end_before_P"] is None else str(p["device_last_end_before_P"] - first_ts)
                ),
                "straddling_events": p["straddling_events"],
            }
            for p in points
        ],
    }
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
