"""The reference a multi-host analysis is held to, computed straight from a run's raw files — never through Falcon:
which collective instances ran on every host, when each host arrived at each and left it, who was last, and how
each host's time in collectives splits into waiting for its peers and the transfer itself.

    python reference.py RUN_DIR [--out RUN_DIR/reference.json]

RUN_DIR is a run folder of make_fixtures.sh: an XSpace run (plugins/profile/<run>/<host>.xplane.pb, read with
jax.profiler.ProfileData: run it with the JAX example's venv, `bash examples/jax_transformer/setup.sh`) or a
PyTorch one (rank-<i>.pt.trace.json[.gz], read with json; any python 3) — CPU over gloo, or GPU over NCCL like
the public set hta-dlrm-8 (any *.pt.trace.json[.gz] names: the host is rank-<distributedInfo.rank>). README.md,
"The reference", says what each number means and which event stands for a host's arrival at a collective.

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


# NCCL's device kernels: ncclKernel_AllReduce_RING_LL_Sum_float(...) (older NCCL, e.g. 2.17), ncclDevKernel_AllReduce_Sum_f32_RING_LL(...) (newer)
NCCL_KERNEL = re.compile(r"^nccl(Dev)?Kernel_([A-Za-z]+)")

# Bytes per element: a record_param_comms / kernel `dtype` arg (c10 ScalarType names) and a `nccl:<op>` annotation's
# `Input type` (C++ type names as the profiler records them).
DTYPE_BYTES = {
    "Float": 4, "Double": 8, "Half": 2, "BFloat16": 2, "Int": 4, "Long": 8, "Short": 2, "Char": 1, "Byte": 1,
    "Bool": 1, "Float8_e4m3fn": 1, "Float8_e5m2": 1, "Float8_e4m3fnuz": 1, "Float8_e5m2fnuz": 1,
    "ComplexFloat": 8, "ComplexDouble": 16, "UInt16": 2, "UInt32": 4, "UInt64": 8,
    "float": 4, "double": 8, "c10::Half": 2, "c10::BFloat16": 2, "int": 4, "long int": 8, "long": 8,
    "short int": 2, "short": 2, "signed char": 1, "unsigned char": 1, "bool": 1,
    "c10::Float8_e4m3fn": 1, "c10::Float8_e5m2": 1, "c10::complex<float>": 8, "c10::complex<double>": 16,
}


def nccl_kernels(events):
    """The NCCL kernels of a GPU trace, each with what its launch says of it (see pytorch_host)."""
    kernels = [e for e in events if e.get("cat") == "kernel" and NCCL_KERNEL.match(str(e.get("name", "")))]
    if not kernels:
        return []
    launches = {}
    for e in events:
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {}):
            launches[e["args"]["correlation"]] = e
    by_thread = {}
    for e in events:
        if e.get("cat") in ("cpu_op", "user_annotation") and (
                e.get("name") == "record_param_comms" or str(e.get("name", "")).startswith("nccl:")):
            by_thread.setdefault((e["pid"], e["tid"]), []).append(e)

    def enclosing(launch, pred):
        """The innermost op on the launch's thread around the launch for which pred holds."""
        if launch is None:
            return None
        inside = [c for c in by_thread.get((launch["pid"], launch["tid"]), [])
                  if pred(c) and c["ts"] <= launch["ts"] <= c["ts"] + c["dur"]]
        return min(inside, key=lambda c: c["dur"]) if inside else None

    out = []
    for k in kernels:
        a = dict(k.get("args", {}))
        launch = launches.get(a.get("correlation"))
        rpc = enclosing(launch, lambda c: c["name"] == "record_param_comms")
        ann = enclosing(launch, lambda c: str(c["name"]).startswith("nccl:"))
        # Newer PyTorch copies record_param_comms' args (Collective name, In/Out msg nelems, dtype, Process Group
        # Name, Seq, ...) onto the kernel; older only has them, if at all, on the CPU op.
        for key, v in (rpc or {}).get("args", {}).items():
            a.setdefault(key, v)
        collective = a.get("Collective name") or (ann["name"][len("nccl:"):] if ann else None) \
            or NCCL_KERNEL.match(k["name"]).group(2)
        nbytes, source = None, None
        n_in, n_out, dt = a.get("In msg nelems"), a.get("Out msg nelems"), a.get("dtype")
        if (n_in is not None or n_out is not None) and dt in DTYPE_BYTES:
            nbytes, source = max(int(n_in or 0), int(n_out or 0)) * DTYPE_BYTES[dt], "In/Out msg nelems x dtype"
        elif ann is not None:
            dims, types = ann.get("args", {}).get("Input Dims"), ann.get("args", {}).get("Input type")
            if dims and types and isinstance(dims[0], list) and types[0] in DTYPE_BYTES:
                n = 1
                for x in dims[0]:
                    n *= int(x)
                nbytes, source = n * DTYPE_BYTES[types[0]], f"{ann['name']} Input Dims x Input type"
        out.append((k, a, str(collective), nbytes, source))
    return out


def pytorch_host(path):
    """One rank's collective events and step spans, in absolute ns.

    A PyTorch (Kineto) chrome trace's `ts`/`dur` are µs with ns decimals, relative to the trace's
    `baseTimeNanoseconds`: absolute ns = baseTimeNanoseconds + ts * 1000. (Checked against truth.jsonl: a rank's
    entry into a step comes 0.1-0.3 ms after its ProfilerStep#N starts.) Numbers are parsed as decimals: a double
    cannot hold ts (~5.7e12 µs) to the ns. Older traces (no baseTimeNanoseconds) have ts in whole µs since the epoch.

    The collective's event is the one that really runs it: `gloo:<op>` (cat user_annotation) on one of the rank's
    pt_gloo_runloop threads. It starts when the gloo algorithm starts on this rank (its arrival) and ends when the
    rank has the result (its end); the main thread's `c10d::allreduce_` only enqueues the work. On a GPU run over
    NCCL it is the NCCL kernel (`ncclKernel_<Op>_…` / `ncclDevKernel_<Op>_…`, cat kernel) on the GPU: it starts
    when the GPU reaches it and spins until every peer has joined, then moves the data. Its collective name, size
    and process group come from its args or, failing those, from the CPU op that launched it (kernel
    `correlation` = the launch's; the launch's innermost enclosing `record_param_comms` / `nccl:<op>`). Where a
    trace has neither but `record_param_comms` ones, those are taken instead.
    """
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        d = json.load(f, parse_float=decimal.Decimal)
    base = int(d.get("baseTimeNanoseconds", 0))
    info = d.get("distributedInfo") or {}

    def ns(us):
        return base + int((decimal.Decimal(us) * 1000).to_integral_value(decimal.ROUND_HALF_EVEN))

    events = [e for e in d["traceEvents"] if e.get("ph") == "X"]
    steps = []
    for e in events:
        m = re.fullmatch(r"ProfilerStep#(\d+)", str(e.get("name", "")))
        if m:
            steps.append((ns(e["ts"]), ns(e["ts"] + e["dur"]), int(m.group(1))))
    gloo = [e for e in events if str(e.get("name", "")).startswith("gloo:")]
    kernels = [] if gloo else nccl_kernels(events)
    if kernels:
        return nccl_host(kernels, ns), steps, info, "nccl-kernels"
    chosen = gloo or [e for e in events if e.get("name") == "record_param_comms"]
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
    return colls, steps, info, None


def nccl_host(kernels, ns):
    """A GPU rank's collectives: one per NCCL kernel, keyed to match the same collective on the other ranks.

    By `Process Group Name` + `Seq` where the kernel or its record_param_comms has both; else by the kernel's
    occurrence index on the rank (in start order), counted per CUDA stream when the rank's NCCL kernels use more
    than one (each process group has its own stream; ranks create them in the same order).
    """
    colls = []
    for k, a, collective, nbytes, source in kernels:
        seq = a.get("Seq", a.get("seq"))
        colls.append({"name": k["name"], "collective": collective, "pg": a.get("Process Group Name"), "seq": seq,
                      "stream": a.get("stream"), "dims": None, "bytes": nbytes, "bytes_from": source,
                      "start": ns(k["ts"]), "end": ns(k["ts"] + k["dur"])})
    colls.sort(key=lambda c: (c["start"], c["end"]))
    several_streams = len({c["stream"] for c in colls}) > 1
    seen = {}
    for c in colls:
        if c["pg"] is not None and c["seq"] is not None:
            base = f"pg={c['pg']} seq={c['seq']}"
        else:
            short = c["name"].split("(")[0]
            base = f"{short} stream={c['stream']}" if several_streams else short
            ix = seen.get(c["stream"] if several_streams else None, 0)
            seen[c["stream"] if several_streams else None] = ix + 1
            base = f"{base} #{ix}"
        c["key"] = base
    # Coalesced collectives can share a Seq: tell them apart by their order.
    dup = {}
    for c in colls:
        dup[c["key"]] = dup.get(c["key"], 0) + 1
    count = {}
    for c in colls:
        if dup[c["key"]] > 1:
            k = c["key"]
            c["key"] = f"{k} #{count.get(k, 0)}"
            count[k] = count.get(k, 0) + 1
    return colls


def read_pytorch(run_dir):
    files = sorted(glob.glob(os.path.join(run_dir, "*.pt.trace.json.gz")) + glob.glob(os.path.join(run_dir, "*.pt.trace.json")))
    hosts, sources = {}, set()
    for f in files:
        colls, steps, info, source = pytorch_host(f)
        stem = re.sub(r"\.pt\.trace\.json(\.gz)?$", "", os.path.basename(f))
        host = f"rank-{info['rank']}" if "rank" in info else stem
        # A file named rank-<i> must be rank i's; any other name (worker3_step_12.<ms>) takes its rank's.
        if re.fullmatch(r"rank-\d+", stem) and host != stem:
            sys.exit(f"{f}: its distributedInfo says rank {info.get('rank')}, its name {stem}")
        if host in hosts:
            sys.exit(f"{run_dir}: two traces of {host}")
        hosts[host] = (colls, steps)
        sources.add(source)
    if len(sources) > 1:
        sys.exit(f"{run_dir}: the ranks' collectives are of different kinds: {sorted(map(str, sources))}")
    return hosts, sources.pop() if sources else None


# ---------------------------------------------------------------- the reference


def step_of(steps, t):
    inside = [s for s in steps if s[0] <= t <= s[1]]
    return min(inside, key=lambda s: s[1] - s[0])[2] if inside else None


def reference(fmt, hosts, events=None):
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
        inst = {
            "step": steps[last],
            "steps_agree": len(set(steps.values())) == 1,
            "name": m[last]["name"],
            "key": k,
        }
        if "collective" in m[last]:  # a GPU run's NCCL kernels: what the collective was and how many bytes it moved
            if len({c["collective"] for c in m.values()}) != 1:
                sys.exit(f"{k}: the hosts disagree on the collective: {[(h, c['collective']) for h, c in m.items()]}")
            by_host = {h: m[h]["bytes"] for h in names}
            inst["collective"] = m[last]["collective"]
            inst["bytes"] = by_host[last] if len(set(by_host.values())) == 1 else None
            if len(set(by_host.values())) != 1:
                inst["bytes_by_host"] = by_host
            inst["bytes_from"] = m[last]["bytes_from"]
        instances.append({
            **inst,
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
    head = {"format": fmt, "collective_events": events} if events else {"format": fmt}
    return {**head, "hosts": names, "instances": instances, "per_host": per_host, "straggler": straggler}


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
        fmt, hosts, events = "xspace", read_xspace(a.run_dir), None
    elif glob.glob(os.path.join(a.run_dir, "*.pt.trace.json*")):
        fmt, (hosts, events) = "pytorch", read_pytorch(a.run_dir)
    else:
        sys.exit(f"{a.run_dir}: neither plugins/profile/<run>/*.xplane.pb nor *.pt.trace.json[.gz]")
    if len(hosts) < 2:
        sys.exit(f"{a.run_dir}: {len(hosts)} host(s): a multi-host reference needs two or more")
    check_truth(a.run_dir, hosts)
    ref = reference(fmt, hosts, events)
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
