#!/usr/bin/env python3
"""Reads the JSON lines of run_otava.py and Falcon's bench test (stdin or files) and prints Markdown tables:
the issue's two series file by file, then totals per tool, kind of series and size over all draws.

Precision = hits / reported, recall = hits / true change points (hit: within +-5 of a true one, each true
one matched once); "exact" = series whose report is exactly the true change points (+-5), nothing more.
"""

import collections
import fileinput
import json
import pathlib
import statistics

from score import hits, truth


def main() -> None:
    rows = [json.loads(line) for line in fileinput.input() if line.startswith("{")]
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
