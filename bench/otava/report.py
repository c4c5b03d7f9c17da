#!/usr/bin/env python3
"""Reads the JSON lines of run_otava.py and Falcon's bench test (stdin or files) and prints Markdown tables:
the issue's two series file by file, then totals per tool, kind of series and size over all draws.

Precision = hits / reported, recall = hits / true change points (hit: within +-5 of a true one, each true
one matched once); "exact" = series whose report is exactly the true change points (+-5), nothing more.

Rows of the small-n scenario (small_*, stable_*; gen_series.py --small) are printed instead as a power table:
for each tool, shift size x runs after the shift -> share of series with a change point reported at exactly the
true index (4, the first slow run), and the share of stable series of each length with any change point.
"""

import collections
import fileinput
import json
import pathlib
import statistics

from score import hits, truth


TOOLS = ("falcon-shift", "otava", "falcon")
TOOL_NAMES = {"falcon-shift": "Falcon `shifts`", "otava": "Otava", "falcon": "Falcon `change_points`"}


def power_tables(rows: list) -> None:
    """The small-n power table and the false-alarm rate on stable series."""
    detect = collections.defaultdict(lambda: [0, 0])
    false_any = collections.defaultdict(lambda: [0, 0])
    for r in rows:
        name = r["name"]
        if name.startswith("small_"):
            shift, after = (int(p[1:]) for p in name.split("_")[1:3])
            cell = detect[(r["tool"], shift, after)]
            cell[0] += 4 in r["indices"]
            cell[1] += 1
        else:
            n = int(name.split("_")[1][1:])
            cell = false_any[(r["tool"], n)]
            cell[0] += bool(r["indices"])
            cell[1] += 1
    shifts = sorted({k[1] for k in detect})
    afters = sorted({k[2] for k in detect})
    if detect:
        draws = max(c[1] for c in detect.values())
        print(f"Detection rate: change point reported at the first shifted run (index 4), after 4 stable runs; "
              f"{draws} series per cell\n")
        print("| shift | tool | " + " | ".join(f"{a} run{'s' if a > 1 else ''} after" for a in afters) + " |")
        print("|---|---|" + "---|" * len(afters))
        for s in shifts:
            for tool in TOOLS:
                cells = [detect.get((tool, s, a)) for a in afters]
                if any(cells):
                    shown = " | ".join(f"{c[0] / c[1]:.0%}" if c else "—" for c in cells)
                    print(f"| +{s} % | {TOOL_NAMES[tool]} | {shown} |")
    if false_any:
        lengths = sorted({k[1] for k in false_any})
        draws = max(c[1] for c in false_any.values())
        print(f"\nStable series (no shift): share with any change point; {draws} series per length\n")
        print("| tool | " + " | ".join(f"n = {n}" for n in lengths) + " |")
        print("|---|" + "---|" * len(lengths))
        for tool in TOOLS:
            cells = [false_any.get((tool, n)) for n in lengths]
            if any(cells):
                print(f"| {TOOL_NAMES[tool]} | " + " | ".join(f"{c[0] / c[1]:.1%}" if c else "—" for c in cells) + " |")


def main() -> None:
    rows = [json.loads(line) for line in fileinput.input() if line.startswith("{")]
    for r in rows:
        r["name"] = pathlib.Path(r["file"]).name
    small = [r for r in rows if r["name"].startswith(("small_", "stable_"))]
    rows = [r for r in rows if not r["name"].startswith(("small_", "stable_"))]
    if small:
        power_tables(small)
        if not rows:
            return
        print()
    for r in rows:
        r["name"] = pathlib.Path(r["file"]).name
        r["truth"] = truth(r["file"], r["n"])
        r["hits"] = hits(r["indices"], r["truth"])
        r["exact"] = r["hits"] == len(r["truth"]) == len(r["indices"])

    print("| series | n | tool | reported | hits (±5) | precision | recall | wall time (median of 5) |")
    print("|---|---|---|---|---|---|---|---|")
    issue = sorted((r for r in rows if r["name"].startswith("series_")), key=lambda r: (r["n"], r["tool"]))
    times = {}
    for r in issue:
        p = r["hits"] / len(r["indices"]) if r["indices"] else 1.0
        rec = r["hits"] / len(r["truth"])
        times[(r["n"], r["tool"])] = r["wall_s_median"]
        shown = r["indices"] if len(r["indices"]) <= 6 else f"{len(r['indices'])} points"
        print(f"| {r['name']} | {r['n']} | {r['tool']} | {shown} | {r['hits']} | {p:.3f} | {rec:.3f} | "
              f"{r['wall_s_median'] * 1e3:.1f} ms |")
    for n in sorted({n for n, _ in times}):
        if (n, "otava") in times and (n, "falcon") in times:
            print(f"\nn = {n}: Otava / Falcon wall time = {times[(n, 'otava')] / times[(n, 'falcon')]:.1f}x")

    groups = collections.defaultdict(list)
    for r in rows:
        kind = "noise" if r["name"].startswith("noise_") else "steps"
        groups[(kind, r["n"], r["tool"])].append(r)
    if any(len(g) > 1 for g in groups.values()):
        print("\n| series | n | tool | series count | reported | hits | precision | recall | exact | "
              "series with a false point | median time |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for (kind, n, tool), g in sorted(groups.items()):
            reported = sum(len(r["indices"]) for r in g)
            h = sum(r["hits"] for r in g)
            true = sum(len(r["truth"]) for r in g)
            precision = f"{h / reported:.3f}" if reported else "—"
            recall = f"{h / true:.3f}" if true else "—"
            exact = sum(r["exact"] for r in g)
            false_any = sum(len(r["indices"]) > r["hits"] for r in g)
            med = statistics.median(r["wall_s_median"] for r in g)
            print(f"| {kind} | {n} | {tool} | {len(g)} | {reported} | {h} | {precision} | {recall} | "
                  f"{exact}/{len(g)} | {false_any}/{len(g)} | {med * 1e3:.1f} ms |")


if __name__ == "__main__":
    main()
