"""Falcon's fault-injection campaign: a queue of synthetic experiments (workload.py, about a second each: metrics,
a log, two artifacts whose bytes are known) run under faults, then every experiment checked.

    python3 bench/faults/campaign.py --falcon target/debug/falcon [--short] [--db sqlite,mariadb]
                                     [--scenario worker-kill,db-restart,...] [--out FILE]

Scenarios (each on every database asked for, unless it says otherwise):
  worker-kill   `falcon worker` killed with SIGKILL at random moments while it runs the queue (100 kills; --short:
                10), restarted each time.
  db-restart    the database unavailable while a worker runs the queue (6 times; --short: 2): the private mariadbd
                stopped and started again; SQLite, a file with no server to restart, locked by another process
                (an exclusive transaction held for 1-4 s, so every write waits or fails).
  gcs-down      the artifact store a private GCS emulator (objects on disk) killed with SIGKILL while the worker
                uploads, and started again a few seconds later (8 outages; --short: 3).
  disk-full     the local artifact store on a 3 MiB tmpfs that the queue's artifacts overfill (needs root to mount);
                the project's `[jobs] collect_patience_s` is 5 s, so a refused collection ends FAILED quickly.
  serve-kill    `falcon serve` (with its worker) killed with SIGKILL while clients submit, follow logs and download
                artifacts (20 kills; --short: 3), restarted each time.
  partition     two workers; the one running the jobs stopped with SIGSTOP past its lease (the other takes over),
                then continued (10 rounds; --short: 2).

Every experiment must end exactly once: COMPLETED with its ten metrics and both artifacts byte for byte (the
disk-full scenario: COMPLETED so, or FAILED with a reason that names the disk), never stuck in a non-final status,
its workload's `end` written once to the ledger. With the GCS emulator every indexed object is also read back from
the bucket and must have the size and SHA-256 the index says (no partial object indexed). A row per scenario and database: runs, faults injected, lost,
duplicated, stuck, seconds. MariaDB is always a private `mariadbd` (own datadir, own port), never a shared one.
"""

import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = os.path.join(HERE, "workload.py")
FINAL = {"COMPLETED", "FAILED", "CANCELLED"}


def log(msg):
    print(f"faults: {msg}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def expected_data(idx, kib):
    block = hashlib.sha256(f"falcon-fault-{idx}".encode()).digest()
    return hashlib.sha256((block * (kib * 1024 // len(block) + 1))[: kib * 1024]).hexdigest()


class MariaDB:
    """A private mariadbd: its own datadir, socket and port, grant tables skipped (root without a password)."""

    def __init__(self, root):
        self.dir = os.path.join(root, "mariadb")
        self.data = os.path.join(self.dir, "data")
        self.port = free_port()
        self.proc = None
        os.makedirs(self.data)
        # --no-defaults: the machine's my.cnf (its shared server's settings) must not leak into the private one.
        subprocess.run(["mariadb-install-db", "--no-defaults", f"--datadir={self.data}", "--auth-root-authentication-method=normal",
                        "--skip-test-db", "--user=root"], check=True, capture_output=True)
        self.start()
        subprocess.run(["mariadb", "-h127.0.0.1", f"-P{self.port}", "-uroot", "-e", "CREATE DATABASE falcon"],
                       check=True, capture_output=True)

    @property
    def url(self):
        return f"mysql://root@127.0.0.1:{self.port}/falcon"

    def start(self):
        self.proc = subprocess.Popen(
            ["mariadbd", "--no-defaults", f"--datadir={self.data}", f"--port={self.port}", "--bind-address=127.0.0.1",
             f"--socket={self.dir}/mysqld.sock", f"--pid-file={self.dir}/mysqld.pid", "--skip-grant-tables",
             "--user=root", "--innodb-buffer-pool-size=64M", "--max-connections=500"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.dir, "mysqld.log"), "a"))
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"mariadbd exited ({self.dir}/mysqld.log)")
                time.sleep(0.2)
        raise RuntimeError("mariadbd did not start within 60 s")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=60)
        self.proc = None


class Project:
    """A scratch Falcon project: falcon.toml, the store, a ledger the workloads append to."""

    def __init__(self, falcon, root, db_url=None, artifacts=None, toml_extra=""):
        self.falcon, self.dir = falcon, os.path.join(root, "project")
        os.makedirs(self.dir)
        self.ledger = os.path.join(self.dir, "ledger.txt")
        # Jobs run as users of their own (as root): the ledger they append to is made here, open to them.
        open(self.ledger, "a").close()
        os.chmod(self.ledger, 0o666)
        args = ["init"] + (["--db", db_url] if db_url else [])
        self.f(*args)
        with open(os.path.join(self.dir, "falcon.toml"), "a") as t:
            t.write("\n[jobs]\npoll_interval_ms = 200\nlease_s = 2\n" + toml_extra)
        if artifacts:
            # The artifact store somewhere else (a small filesystem): the top-level `artifacts` key.
            text = open(os.path.join(self.dir, "falcon.toml")).read()
            assert 'data_dir = ".falcon"' in text, text
            text = text.replace('data_dir = ".falcon"', f'data_dir = ".falcon"\nartifacts = "{artifacts}"', 1)
            open(os.path.join(self.dir, "falcon.toml"), "w").write(text)
        self.procs = []

    def env(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("FALCON_")}
        env["HOME"] = self.dir
        return env

    def f(self, *args, check=True, timeout=120):
        r = subprocess.run([self.falcon, *args], cwd=self.dir, env=self.env(), capture_output=True, text=True,
                           timeout=timeout)
        if check and r.returncode != 0:
            raise RuntimeError(f"falcon {' '.join(args)}: exit {r.returncode}: {r.stderr[-2000:]}")
        return r

    def fj(self, *args):
        return json.loads(self.f(*args, "--json").stdout)

    def spawn(self, *args, name):
        logf = open(os.path.join(self.dir, f"{name}.log"), "a")
        p = subprocess.Popen([self.falcon, *args], cwd=self.dir, env=self.env(), stdout=logf, stderr=logf)
        self.procs.append(p)
        return p

    def submit(self, n, kib=64, first=0):
        """n experiments as one session (a sweep over config.idx); their ids."""
        sweep = os.path.join(self.dir, f"sweep-{first}.yaml")
        values = ", ".join(str(i) for i in range(first, first + n))
        with open(sweep, "w") as s:
            s.write(f"""base:
  name: fault
  scenario: benchmark
  workload:
    framework: shell
    command: [python3, {WORKLOAD}, '${{config.idx}}', {self.ledger}, '{kib}']
  config: {{idx: 0}}
  resources: {{accelerator: cpu}}
sweep:
  config.idx: [{values}]
name_template: fault-${{config.idx}}
""")
        session = self.fj("session", "submit", sweep)
        sid = session["id"]
        items = self.fj("exp", "list", "--session", sid, "--limit", "1000")["items"]
        assert len(items) == n, f"{len(items)} experiments in {sid}, not {n}"
        return {it["id"]: int(it["name"].split("-")[1]) for it in items}

    def statuses(self):
        items = self.fj("exp", "list", "--limit", "1000")["items"]
        return {it["id"]: it["status"] for it in items}

    def drain(self, timeout):
        """Runs a worker until every experiment is final (or `timeout`); the ids still not final."""
        deadline = time.time() + timeout
        worker = self.spawn("worker", name="drain-worker")
        try:
            while time.time() < deadline:
                pending = [i for i, s in self.statuses().items() if s not in FINAL]
                if not pending:
                    return []
                time.sleep(0.5)
            return [i for i, s in self.statuses().items() if s not in FINAL]
        finally:
            stop(worker)

    def verify(self, submitted, kib=64, disk_full=False, gcs=None):
        """(lost, duplicated, stuck, notes) over the experiments `submitted` ({id: idx})."""
        ends = {}
        if os.path.exists(self.ledger):
            for line in open(self.ledger):
                parts = line.split()
                if len(parts) >= 2 and parts[0] == "end":
                    ends[int(parts[1])] = ends.get(int(parts[1]), 0) + 1
        lost, stuck, notes = [], [], []
        duplicated = [idx for idx, n in ends.items() if n > 1]
        statuses = self.statuses()
        for eid, idx in submitted.items():
            status = statuses.get(eid)
            if status is None:
                lost.append(eid)
                notes.append(f"{eid}: not in the store")
                continue
            if status not in FINAL:
                stuck.append(eid)
                notes.append(f"{eid}: still {status}")
                continue
            shown = self.fj("exp", "show", eid, "--warmup", "0")
            if status == "FAILED" and disk_full:
                reason = " ".join(h.get("reason", "") for h in shown.get("history", []))
                if "space" in reason.lower() or "disk" in reason.lower() or "full" in reason.lower():
                    continue
                lost.append(eid)
                notes.append(f"{eid}: FAILED without naming the disk: {reason[-300:]}")
                continue
            if status != "COMPLETED":
                lost.append(eid)
                reason = shown.get("history", [{}])[-1].get("reason", "")
                notes.append(f"{eid}: {status} ({reason[-300:]})")
                continue
            problems = []
            count = shown.get("metrics", {}).get("step_time_s", {}).get("count")
            if count != 10:
                problems.append(f"step_time_s count {count}, not 10")
            arts = {a.get("path") or a.get("uri", "").rsplit("/", 1)[-1]: a for a in shown.get("artifacts", [])}
            data = next((a for p, a in arts.items() if p.endswith("data.bin")), None)
            if data is None:
                problems.append("no out/data.bin")
            elif data.get("size") != kib * 1024 or data.get("sha256") != expected_data(idx, kib):
                problems.append(f"out/data.bin size {data.get('size')} sha {data.get('sha256', '')[:12]}")
            if not any(p.endswith("summary.json") for p in arts):
                problems.append("no out/summary.json")
            if gcs is not None:
                for a in shown.get("artifacts", []):
                    uri = a.get("uri", "")
                    if not uri.startswith("gs://faults/"):
                        problems.append(f"artifact {uri!r} outside the bucket")
                        continue
                    try:
                        body = gcs.read(uri[len("gs://faults/"):])
                    except Exception as e:  # noqa: BLE001 - reported as the problem it is
                        problems.append(f"indexed {uri} unreadable: {e}")
                        continue
                    if len(body) != a.get("size") or hashlib.sha256(body).hexdigest() != a.get("sha256"):
                        problems.append(f"indexed {uri}: {len(body)} bytes in the bucket, {a.get('size')} indexed")
            if ends.get(idx, 0) != 1:
                problems.append(f"{ends.get(idx, 0)} ends in the ledger")
            if problems:
                lost.append(eid)
                notes.append(f"{eid}: " + "; ".join(problems))
        return lost, duplicated, stuck, notes

    def close(self):
        for p in self.procs:
            stop(p)


def stop(p, sig=signal.SIGTERM):
    if p.poll() is None:
        try:
            p.send_signal(sig)
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def kill9(p):
    if p.poll() is None:
        p.kill()
        p.wait()


# --- scenarios: each returns (runs, faults, submitted, project, extra verify kwargs) ----------------------------

def worker_kill(falcon, root, db_url, short):
    kills = 10 if short else 100
    project = Project(falcon, root, db_url)
    submitted = project.submit(16 if short else 120)
    worker = project.spawn("worker", name="worker")
    done = 0
    for _ in range(kills):
        time.sleep(random.uniform(0.1, 1.2))
        kill9(worker)
        done += 1
        worker = project.spawn("worker", name="worker")
        if all(s in FINAL for s in project.statuses().values()):
            # Keep faults coming while there is work: top the queue up.
            submitted.update(project.submit(8, first=1000 + done))
    stop(worker)
    return done, submitted, project, {}


def finish_with(project, worker, what, patience=90):
    """Lets `worker` (the one that lived through the faults) run the queue to its end; the problems seen: it
    exited, or it ended no experiment for `patience` seconds while some were not final (a slow machine only
    makes it slower; a stuck worker stops ending them)."""
    last_done, last_progress = -1, time.time()
    while True:
        if worker.poll() is not None:
            return [f"the worker exited (status {worker.returncode}) after {what}; see its log"]
        statuses = project.statuses().values()
        done = sum(1 for s in statuses if s in FINAL)
        if done == len(statuses):
            return []
        if done != last_done:
            last_done, last_progress = done, time.time()
        elif time.time() - last_progress > patience:
            return [f"the worker that lived through {what} ended no experiment for {patience} s "
                    f"({len(statuses) - done} not final)"]
        time.sleep(0.5)


class SqliteLock:
    """SQLite's outage: another process holds an exclusive transaction on the database file for a while."""

    def __init__(self, path):
        self.path, self.conn = path, None

    def stop(self):
        self.conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        self.conn.execute("BEGIN EXCLUSIVE")

    def start(self):
        self.conn.execute("COMMIT")
        self.conn.close()
        self.conn = None


def db_restart(falcon, root, db, short):
    restarts = 2 if short else 6
    project = Project(falcon, root, db.url if db else None)
    if db is None:
        db = SqliteLock(os.path.join(project.dir, ".falcon", "falcon.db"))
    submitted = project.submit(12 if short else 40)
    worker = project.spawn("worker", name="worker")
    done = 0
    for _ in range(restarts):
        time.sleep(random.uniform(1.0, 3.0))
        db.stop()
        time.sleep(random.uniform(1.0, 4.0))
        db.start()
        done += 1
    # The same worker must carry on: it reconnects, it does not exit.
    problems = finish_with(project, worker, "the database restarts")
    stop(worker)
    return done, submitted, project, {"problems": problems}


def disk_full(falcon, root, db_url, short):
    mount = os.path.join(root, "small-disk")
    os.makedirs(mount)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", mount], capture_output=True, text=True)
    if r.returncode != 0:
        raise SkipScenario(f"cannot mount a tmpfs ({r.stderr.strip()}): run as root")
    try:
        # A refused collection is tried again for at least 10 tries and collect_patience_s (default 5 minutes: a
        # store may come back); 5 s here so the campaign sees the FAILED end in a minute.
        project = Project(falcon, root, db_url, artifacts=os.path.join(mount, "artifacts"),
                          toml_extra="collect_patience_s = 5\n")
        # 8 experiments x 512 KiB (plus logs and metrics) into 3 MiB: the first fit, the rest find the disk full.
        submitted = project.submit(8, kib=512)
        worker = project.spawn("worker", name="worker")
        deadline = time.time() + 180
        while time.time() < deadline and not all(s in FINAL for s in project.statuses().values()):
            time.sleep(0.5)
        stop(worker)
        failed = sum(1 for s in project.statuses().values() if s == "FAILED")
        return failed, submitted, project, {"kib": 512, "disk_full": True, "cleanup": lambda: umount(mount)}
    except BaseException:
        umount(mount)
        raise


class GcsEmulator:
    """A private fake-gcs-server: objects on disk (they outlive a restart, as a real bucket's do), its own port."""

    def __init__(self, binary, root):
        self.binary, self.dir = binary, os.path.join(root, "gcs")
        os.makedirs(os.path.join(self.dir, "data"))
        self.port = free_port()
        self.proc = None
        self.start()
        req = urllib.request.Request(f"{self.url}/storage/v1/b", data=json.dumps({"name": "faults"}).encode(),
                                     method="POST", headers={"Content-Type": "application/json"})
        urllib.request.urlopen(req, timeout=10).close()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        self.proc = subprocess.Popen(
            [self.binary, "-scheme", "http", "-host", "127.0.0.1", "-port", str(self.port), "-backend", "filesystem",
             "-filesystem-root", os.path.join(self.dir, "data"), "-log-level", "error"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.dir, "gcs.log"), "a"))
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                urllib.request.urlopen(f"{self.url}/storage/v1/b", timeout=1).close()
                return
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"fake-gcs-server exited ({self.dir}/gcs.log)")
                time.sleep(0.1)
        raise RuntimeError("fake-gcs-server did not answer within 30 s")

    def kill(self):
        if self.proc:
            kill9(self.proc)
        self.proc = None

    def read(self, name):
        quoted = urllib.parse.quote(name, safe="")
        with urllib.request.urlopen(f"{self.url}/storage/v1/b/faults/o/{quoted}?alt=media", timeout=30) as r:
            return r.read()


def gcs_down(falcon, root, db_url, short, gcs_binary):
    outages = 3 if short else 8
    gcs = GcsEmulator(gcs_binary, root)
    project = Project(falcon, root, db_url, artifacts="gs://faults/falcon",
                      toml_extra=f"\n[gcs]\nendpoint = \"{gcs.url}\"\nanonymous = true\n")
    submitted = project.submit(16 if short else 40)
    worker = project.spawn("worker", name="worker")
    done = 0
    for _ in range(outages):
        time.sleep(random.uniform(1.0, 3.0))
        gcs.kill()
        done += 1
        time.sleep(random.uniform(1.0, 5.0))
        gcs.start()
    problems = finish_with(project, worker, "the artifact store's outages")
    stop(worker)
    return done, submitted, project, {"gcs": gcs, "cleanup": gcs.kill, "problems": problems}


def umount(path):
    subprocess.run(["umount", "-l", path], capture_output=True)


def serve_kill(falcon, root, db_url, short):
    kills = 3 if short else 20
    project = Project(falcon, root, db_url)
    port = free_port()
    base = f"http://127.0.0.1:{port}/api/v1"
    state = {"stop": False, "acknowledged": {}, "errors": 0, "downloads": 0, "bad_downloads": 0, "streams": 0, "bad_streams": 0,
             "reader_errors": {}}

    def serve():
        return project.spawn("serve", "--bind", f"127.0.0.1:{port}", name="serve")

    def spec(idx):
        return (f"name: fault-{idx}\nscenario: benchmark\nworkload:\n  framework: shell\n"
                f"  command: [python3, {WORKLOAD}, '{idx}', {project.ledger}, '64']\n"
                f"config: {{idx: {idx}}}\nresources: {{accelerator: cpu}}\n")

    def submitter():
        idx = 0
        while not state["stop"]:
            try:
                req = urllib.request.Request(f"{base}/experiments", data=spec(idx).encode(), method="POST",
                                             headers={"Content-Type": "application/yaml"})
                with urllib.request.urlopen(req, timeout=10) as r:
                    state["acknowledged"][json.load(r)["id"]] = idx
            except Exception:  # the server was killed: refused, reset, cut short
                state["errors"] += 1
            # Never the same idx twice: a submission whose answer was lost may still have been recorded.
            idx += 1
            time.sleep(0.15)

    def reader():
        """Downloads a completed experiment's data.bin (checked against its SHA-256) and follows its log stream
        to the `end` event (it must carry the whole log); the server may die under either."""
        while not state["stop"]:
            try:
                with urllib.request.urlopen(f"{base}/experiments?status=COMPLETED&limit=50", timeout=10) as r:
                    done_ids = [it["id"] for it in json.load(r)["items"]]
                if not done_ids:
                    time.sleep(0.3)
                    continue
                eid = random.choice(done_ids)
                with urllib.request.urlopen(f"{base}/experiments/{eid}/artifacts?limit=50", timeout=10) as r:
                    items = json.load(r)["items"]
                for a in items:
                    path = a["key"].split(f"{eid}/", 1)[-1]  # keys are <experiment prefix>/<path>
                    if path.endswith("data.bin"):
                        quoted = urllib.parse.quote(path)
                        with urllib.request.urlopen(f"{base}/experiments/{eid}/artifacts/{quoted}", timeout=10) as d:
                            body = d.read()
                        if len(body) != a["size"] or hashlib.sha256(body).hexdigest() != a["sha256"]:
                            state["bad_downloads"] += 1
                        state["downloads"] += 1
                req = urllib.request.Request(f"{base}/experiments/{eid}/logs", headers={"Accept": "text/event-stream"})
                text, ended = "", False
                with urllib.request.urlopen(req, timeout=10) as r:
                    for line in r:
                        line = line.decode()
                        text += line
                        if line.startswith("event: end"):
                            ended = True
                        if ended and line.strip() == "":
                            break
                if ended:
                    if "step 9 done" not in text:
                        state["bad_streams"] += 1
                    state["streams"] += 1
            except Exception as e:  # the server was killed mid-request
                state["errors"] += 1
                kind = f"{type(e).__name__}: {str(e)[:80]}"
                state["reader_errors"][kind] = state["reader_errors"].get(kind, 0) + 1
                time.sleep(0.2)

    server = serve()
    threads = [threading.Thread(target=submitter, daemon=True)] + [threading.Thread(target=reader, daemon=True)
                                                                   for _ in range(2)]
    for t in threads:
        t.start()
    done = 0
    for _ in range(kills):
        time.sleep(random.uniform(1.0, 3.0))
        kill9(server)
        done += 1
        time.sleep(random.uniform(0.0, 0.5))
        server = serve()
    time.sleep(2)
    state["stop"] = True
    for t in threads:
        t.join(timeout=15)
    # Restarted, the server resumes the queue: its own worker ends every experiment.
    problems = finish_with(project, server, "its kills")
    stop(server)
    # What the store holds is what counts: every experiment a client was told about, and any other that was
    # recorded before its 201 could be sent, must run.
    submitted = dict(state["acknowledged"])
    for eid, _ in project.statuses().items():
        if eid not in submitted:
            name = project.fj("exp", "show", eid)["name"]
            submitted[eid] = int(name.split("-")[1])
    log(f"serve-kill: {len(state['acknowledged'])} submissions acknowledged, {state['downloads']} downloads, "
        f"{state['streams']} log streams, {state['errors']} client errors")
    for kind, n in sorted(state["reader_errors"].items(), key=lambda kv: -kv[1])[:5]:
        log(f"  reader error x{n}: {kind}")
    if state["bad_downloads"] or state["bad_streams"]:
        raise RuntimeError(f"{state['bad_downloads']} downloads did not match their stored SHA-256; "
                           f"{state['bad_streams']} finished log streams lacked the log's last line")
    return done, submitted, project, {"problems": problems}


def partition(falcon, root, db_url, short):
    rounds = 2 if short else 10
    project = Project(falcon, root, db_url)
    submitted = {}
    done = 0
    for r in range(rounds):
        batch = project.submit(3, first=100 * r)
        submitted.update(batch)
        a = project.spawn("worker", name="worker-a")
        deadline = time.time() + 30
        while time.time() < deadline and not any(s == "RUNNING" for i, s in project.statuses().items() if i in batch):
            time.sleep(0.1)
        a.send_signal(signal.SIGSTOP)
        done += 1
        b = project.spawn("worker", name="worker-b")
        deadline = time.time() + 60
        while time.time() < deadline and not all(project.statuses().get(i) in FINAL for i in batch):
            time.sleep(0.3)
        # The stale worker comes back: whatever it still believes, its writes must not change a thing.
        a.send_signal(signal.SIGCONT)
        time.sleep(3)
        stop(a)
        stop(b)
    return done, submitted, project, {}


class SkipScenario(Exception):
    pass


SCENARIOS = {"worker-kill": worker_kill, "db-restart": db_restart, "gcs-down": gcs_down,
             "disk-full": disk_full, "serve-kill": serve_kill, "partition": partition}
COMMANDS = {"worker-kill": "kill -9 of `falcon worker`, restarted", "db-restart": "mariadbd stopped and started (SQLite: locked by another process)",
            "gcs-down": "kill -9 of the GCS emulator during uploads, restarted",
            "disk-full": "artifact store on a 3 MiB tmpfs", "serve-kill": "kill -9 of `falcon serve` under clients",
            "partition": "SIGSTOP of the worker past its lease, then SIGCONT"}


def gcs_binary():
    services = os.path.join(HERE, "..", "..", "scripts", "services.sh")
    r = subprocess.run(["bash", services, "gcs-binary"], capture_output=True, text=True)
    if r.returncode != 0 or not r.stdout.strip():
        raise RuntimeError(f"scripts/services.sh gcs-binary failed: {r.stderr[-1000:]}")
    return r.stdout.strip().splitlines()[-1]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--falcon", required=True)
    ap.add_argument("--short", action="store_true")
    ap.add_argument("--db", default="sqlite,mariadb")
    ap.add_argument("--scenario", default=",".join(SCENARIOS))
    ap.add_argument("--out", default=None)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--gcs-binary", default=None,
                    help="the fake-gcs-server binary (default: `scripts/services.sh gcs-binary`, which installs it)")
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    random.seed(seed)
    falcon = os.path.abspath(args.falcon)
    rows, failures = [], []
    for scenario in args.scenario.split(","):
        for db_kind in args.db.split(","):
            root = tempfile.mkdtemp(prefix=f"falcon-faults-{scenario}-{db_kind}-")
            os.chmod(root, 0o755)  # as root, jobs run as users of their own, which must enter it (docs/guide/jobs.md, "Workload isolation")
            mariadb = None
            started = time.time()
            cleanup = None
            project = None
            try:
                if db_kind == "mariadb":
                    mariadb = MariaDB(root)
                target = mariadb if scenario == "db-restart" else (mariadb.url if mariadb else None)
                log(f"{scenario} on {db_kind} ({root})")
                more = ()
                if scenario == "gcs-down":
                    more = (args.gcs_binary or gcs_binary(),)
                faults, submitted, project, extra = SCENARIOS[scenario](falcon, root, target, args.short, *more)
                cleanup = extra.pop("cleanup", None)
                problems = extra.pop("problems", [])
                if not extra.get("disk_full"):
                    leftover = project.drain(timeout=120)
                    if leftover:
                        log(f"{scenario}/{db_kind}: not final after the drain: {leftover}")
                lost, duplicated, stuck, notes = project.verify(submitted, **extra)
                seconds = time.time() - started
                rows.append((scenario, db_kind, len(submitted), faults, len(lost), len(duplicated), len(stuck),
                             round(seconds)))
                for n in problems + notes[:20]:
                    log(f"  {n}")
                if lost or duplicated or stuck or problems:
                    failures.append(f"{scenario}/{db_kind}")
                log(f"{scenario} on {db_kind}: {len(submitted)} runs, {faults} faults, lost {len(lost)}, "
                    f"duplicated {len(duplicated)}, stuck {len(stuck)}, {seconds:.0f} s")
            except SkipScenario as e:
                rows.append((scenario, db_kind, 0, 0, "—", "—", "—", 0))
                log(f"{scenario} on {db_kind}: not run: {e}")
                failures.append(f"{scenario}/{db_kind} (not run: {e})")
            finally:
                if project:
                    project.close()
                if cleanup:
                    cleanup()
                if mariadb:
                    mariadb.stop()
                if not args.keep and not failures:
                    shutil.rmtree(root, ignore_errors=True)
    table = ["| scenario | fault | database | runs | faults injected | lost | duplicated | stuck | seconds | command |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        command = (f"`python3 bench/faults/campaign.py --falcon target/debug/falcon{' --short' if args.short else ''}"
                   f" --scenario {r[0]} --db {r[1]}`")
        table.append("| " + " | ".join([r[0], COMMANDS[r[0]], *(str(c) for c in r[1:]), command]) + " |")
    text = "\n".join(table) + f"\n\nseed {seed}; {'short' if args.short else 'full'} campaign\n"
    print(text)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        open(args.out, "w").write(text)
    if failures:
        log(f"FAILED: {', '.join(failures)} (stores kept under {tempfile.gettempdir()}/falcon-faults-*)")
        sys.exit(1)


if __name__ == "__main__":
    main()
