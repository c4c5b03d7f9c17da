"""The reference a multi-host analysis is held to, computed straight from a run's raw files — never through Falcon:
which collective instances ran on every host, when each host arrived at each and left it, who was last, and how
each host's time in collectives splits into waiting for its peers and the transfer itself.

    python reference.py RUN_DIR [--out RUN_DIR/reference.json]

RUN_DIR is a run folder of make_fixtures.sh: an XSpace run (plugins/profile/<run>/<host>.xplane.pb, read with
jax.profiler.ProfileData: run it with the JAX example's venv, `bash examples/jax_transformer/setup.sh`) or a
PyTorch one (rank-<i>.pt.trace.json[.gz], read with json; any python 3). README.md, "The reference", says what
each number means and which event stands for a host's arrival at a collective.

Every time is absolute — wall clock, µs since the epoch — so the hosts' times compare directly (they ran on one
machine, one clock). Where RUN_DIR has truth.jsonl (each process's own clock of when it entered each step), every
host's entry into a step must come before its arrival at that step's collective; this checks it and stops if not.
"""

import argparse
import decimal
import glob
import gzip
import json
import os
import re
import statistics
import sys

# XLA's collective HLO ops (an instruction is named after its opcode: all-reduce.3, all-gather-start.1, ...).
XLA_COLLECTIVE = re.compile(
    r"^(all-reduce|all-gather|reduce-scatter|all-to-all|ragged-all-to-all|collective-permute|collective-broadcast)"
    r"(-start|-done)?(\.|$)"
)


def natural(s):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


def median(xs):
    return statistics.median(xs) if xs else None


# ---------------------------------------------------------------- XSpace (JAX)


def xspace_host(path):
    """One host's collective events and step spans, in absolute ns.

    ProfileData's event start_ns is NOT absolute: it is the XLine's timestamp_ns plus the event's offset, and the
    profiler normalizes every line's timestamp to the start of the profile (an XLine timestamp_ns here is a few µs).
    The absolute start of the profile is the `profile_start_time` stat (ns since the epoch) of the "Task
    Environment" plane, so absolute = profile_start_time + start_ns. (Checked against truth.jsonl: an on-time
    process's entry into a step comes 5-10 µs after its `train` annotation starts.)
    """
    from jax.profiler import ProfileData  # only XSpace runs need JAX

    pd = ProfileData.from_file(path)
    env = pd.find_plane_with_name("Task Environment")
    if env is None:
        sys.exit(f"{path}: no Task Environment plane (profile_start_time): cannot make its times absolute")
    t0 = int(dict(env.stats)["profile_start_time"])
    cpu = pd.find_plane_with_name("/host:CPU")
    if cpu is None:
        sys.exit(f"{path}: no /host:CPU plane")

    def ns(x):  # ProfileData gives float ns relative to the profile start; whole ns
        return t0 + int(round(x))

    colls, steps = [], []
    for line in cpu.lines:
        for e in line.events:
            st = dict(e.stats)
            if "step_num" in st:  # jax.profiler.StepTraceAnnotation("train", step_num=k)
                steps.append((ns(e.start_ns), ns(e.end_ns), int(st["step_num"])))
            op = st.get("hlo_op")
            if op is not None and XLA_COLLECTIVE.match(op):
                colls.append({"name": op, "run_id": st["run_id"], "module": st.get("hlo_module"),
                              "start": ns(e.start_ns), "end": ns(e.end_ns)})
    # The same op run more than once in one execution: its occurrence index tells the runs apart.
    colls.sort(key=lambda c: c["start"])
    seen = {}
    for c in colls:
        k = (c["run_id"], c["name"])
        c["key"] = f"run_id={c['run_id']} {c['name']} #{seen.get(k, 0)}"
        seen[k] = seen.get(k, 0) + 1
    return colls, steps


def read_xspace(run_dir):
    files = sorted(glob.glob(os.path.join(run_dir, "plugins", "profile", "*", "*.xplane.pb")))
    if len({os.path.dirname(f) for f in files}) != 1:
        sys.exit(f"{run_dir}: expected one plugins/profile/<run>/ folder of *.xplane.pb")
    hosts = {}
    for f in files:
        hosts[os.path.basename(f)[: -len(".xplane.pb")]] = xspace_host(f)
    return hosts


# ---------------------------------------------------------------- PyTorch (chrome traces)


def pytorch_host(path):
    """One rank's collective events and step spans, in absolute ns.

    A PyTorch (Kineto) chrome trace's `ts`/`dur` are µs with ns decimals, relative to the trace's
    `baseTimeNanoseconds`: absolute ns = baseTimeNanoseconds + ts * 1000. (Checked against truth.jsonl: a rank's
    entry into a step comes 0.1-0.3 ms after its ProfilerStep#N starts.) Numbers are parsed as decimals: a double
    cannot hold ts (~5.7e12 µs) to the ns.

    The collective's event is the one that really runs it: `gloo:<op>` (cat user_annotation) on one of the rank's
    pt_gloo_runloop threads. It starts when the gloo algorithm starts on this rank (its arrival) and ends when the
    rank has the result (its end); the main thread's `c10d::allreduce_` only enqueues the work. Where a trace has
    no gloo event but `record_param_comms` ones (other backends), those are taken instead.
    """
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        d = json.load(f, parse_float=decimal.Decimal)
    base = int(d["baseTimeNanoseconds"])
    info = d.get("distributedInfo") or {}

    def ns(us):
        return base + int((decimal.Decimal(us) * 1000).to_integral_value(decimal.ROUND_HALF_EVEN))

    events = [e for e in d["traceEvents"] if e.get("ph") == "X"]
    gloo = [e for e in events if str(e.get("name", "")).startswith("gloo:")]
    chosen = gloo or [e for e in events if e.get("name") == "record_param_comms"]
    steps = []
    for e in events:
        m = re.fullmatch(r"ProfilerStep#(\d+)", str(e.get("name", "")))
        if m:
            steps.append((ns(e["ts"]), ns(e["ts"] + e["dur"]), int(m.group(1))))
    colls = []
    for e in chosen:
        a = e.get("args", {})
        name = a.get("Collective name") or e["name"]
        pg = a.get("Process Group Name")
        seq = a.get("Seq", a.get("seq"))
        colls.append({"name": str(name), "pg": pg, "seq": seq, "dims": a.get("Input Dims"),
                      "start": ns(e["ts"]), "end": ns(e["ts"] + e["dur"])})
    colls.sort(key=lambda c: c["start"])
    # Match by process group and sequence number where the trace records them; gloo's events record neither, so
    # by the collective's occurrence index on the rank (each rank runs the same collectives in the same order).
    for i, c in enumerate(colls):
        c["key"] = f"pg={c['pg']} seq={c['seq']}" if c["pg"] is not None and c["seq"] is not None else f"{c['name']} #{i}"
    return colls, steps, info


def read_pytorch(run_dir):
    files = sorted(glob.glob(os.path.join(run_dir, "*.pt.trace.json.gz")) + glob.glob(os.path.join(run_dir, "*.pt.trace.json")))
    hosts = {}
    for f in files:
        colls, steps, info = pytorch_host(f)
        stem = re.sub(r"\.pt\.trace\.json(\.gz)?$", "", os.path.basename(f))
        host = f"rank-{info['rank']}" if "rank" in info else stem
        if host != stem:
            sys.exit(f"{f}: its distributedInfo says rank {info.get('rank')}, its name {stem}")
        if host in hosts:
            sys.exit(f"{run_dir}: two traces of {host}")
        hosts[host] = (colls, steps)
    return hosts


# ---------------------------------------------------------------- the reference


def step_of(steps, t):
    inside = [s for s in steps if s[0] <= t <= s[1]]
    return min(inside, key=lambda s: s[1] - s[0])[2] if inside else None


def reference(fmt, hosts):
    names = sorted(hosts, key=natural)
    by_key = {h: {c["key"]: c for c in hosts[h][0]} for h in names}
    keys = [c["key"] for c in hosts[names[0]][0]]
    for h in names:
        if set(by_key[h]) != set(keys):
            sys.exit(f"{h}'s collectives do not match {names[0]}'s: {sorted(set(by_key[h]) ^ set(keys))[:6]}")
    instances = []
    per = {h: {"collective_ns": 0, "wait_ns": 0, "transfer_ns": 0, "late": []} for h in names}
    for k in keys:
        m = {h: by_key[h][k] for h in names}
        if len({c["name"] for c in m.values()}) != 1 or len({json.dumps(c.get("dims")) for c in m.values()}) != 1:
            sys.exit(f"{k}: the hosts disagree on what it is: {[(h, c['name'], c.get('dims')) for h, c in m.items()]}")
        last = max(names, key=lambda h: (m[h]["start"], natural(h)))
        t_last = m[last]["start"]
        others = [m[h]["start"] for h in names if h != last]
        late_ns = t_last - statistics.median(others) if others else 0
        steps = {h: step_of(hosts[h][1], m[h]["start"]) for h in names}
        for h in names:
            c = m[h]
            per[h]["collective_ns"] += c["end"] - c["start"]
            per[h]["wait_ns"] += t_last - c["start"]
            per[h]["transfer_ns"] += max(0, c["end"] - t_last)
        per[last]["late"].append(late_ns)
        instances.append({
            "step": steps[last],
            "steps_agree": len(set(steps.values())) == 1,
            "name": m[last]["name"],
            "key": k,
            "arrival_us": {h: m[h]["start"] / 1000 for h in names},
            "end_us": {h: m[h]["end"] / 1000 for h in names},
            "last": last,
            "late_us": late_ns / 1000,
        })
    per_host = {}
    for h in names:
        p = per[h]
        per_host[h] = {
            "collective_us": p["collective_ns"] / 1000,
            "wait_for_peers_us": p["wait_ns"] / 1000,
            "transfer_us": p["transfer_ns"] / 1000,
            "times_last": len(p["late"]),
            "late_us_median": median(p["late"]) / 1000 if p["late"] else None,
        }
    all_steps = sorted({i["step"] for i in instances if i["step"] is not None})
    straggler = None
    if instances:
        h = max(names, key=lambda h: (per_host[h]["times_last"], per_host[h]["late_us_median"] or 0))
        straggler = {
            "host": h,
            "steps_last": len({i["step"] for i in instances if i["last"] == h}),
            "steps": len(all_steps),
            "late_us_median": per_host[h]["late_us_median"],
        }
    return {"format": fmt, "hosts": names, "instances": instances, "per_host": per_host, "straggler": straggler}


def check_truth(run_dir, hosts):
    """Each host's own clock of entering a step (truth.jsonl) must precede its arrival at that step's collective."""
    path = os.path.join(run_dir, "truth.jsonl")
    if not os.path.exists(path):
        return
    entered = {}
    for line in open(path):
        t = json.loads(line)
        who = f"host-{t['process']}" if "process" in t else f"rank-{t['rank']}"
        entered[(who, t["step"])] = t["entered_ns"]
    for h, (colls, steps) in sorted(hosts.items(), key=lambda x: natural(x[0])):
        leads = []
        for c in colls:
            s = step_of(steps, c["start"])
            e = entered.get((h, s))
            if e is None:
                sys.exit(f"{h}: truth.jsonl has no step {s} (the step of {c['key']})")
            span = next(x for x in steps if x[2] == s)
            if not (span[0] <= e <= c["start"]):
                sys.exit(f"{h} step {s}: entered at {e} ns, but the step starts at {span[0]} and {c['key']} at {c['start']}")
            leads.append(c["start"] - e)
        print(f"truth: {h}: entered each step {min(leads) / 1000:.0f}-{max(leads) / 1000:.0f} µs before its collective "
              f"(median {median(leads) / 1000:.0f})", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run_dir")
    ap.add_argument("--out", help="default RUN_DIR/reference.json")
    a = ap.parse_args()
    if glob.glob(os.path.join(a.run_dir, "plugins", "profile", "*", "*.xplane.pb")):
        fmt, hosts = "xspace", read_xspace(a.run_dir)
    elif glob.glob(os.path.join(a.run_dir, "*.pt.trace.json*")):
        fmt, hosts = "pytorch", read_pytorch(a.run_dir)
    else:
        sys.exit(f"{a.run_dir}: neither plugins/profile/<run>/*.xplane.pb nor *.pt.trace.json[.gz]")
    if len(hosts) < 2:
        sys.exit(f"{a.run_dir}: {len(hosts)} host(s): a multi-host reference needs two or more")
    check_truth(a.run_dir, hosts)
    ref = reference(fmt, hosts)
    out = a.out or os.path.join(a.run_dir, "reference.json")
    with open(out, "w") as f:
        json.dump(ref, f, indent=1, ensure_ascii=False)
        f.write("\n")
    s = ref["straggler"]
    print(f"{a.run_dir}: {len(ref['instances'])} instances; straggler {s['host']} last in {s['steps_last']}/{s['steps']} "
          f"steps, late by {s['late_us_median']:.0f} µs (median)", file=sys.stderr)
    for h, p in ref["per_host"].items():
        print(f"  {h}: wait {p['wait_for_peers_us']:.0f} µs, transfer {p['transfer_us']:.0f} µs, "
              f"collective {p['collective_us']:.0f} µs, last {p['times_last']}x", file=sys.stderr)


if __name__ == "__main__":
    main()
