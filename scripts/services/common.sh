# shellcheck shell=bash
# Sourced by scripts/services.sh: logging, running as root, process and daemon helpers (a pid file and a
# port file per daemon) that every service uses, and the Python venv the GCS emulator and the S3 server share.

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

pid_is() { # pid name-substring: true if pid is alive and its cmdline contains name
    local pid="$1" name="$2"
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    local cmd
    cmd="$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline")" || return 1
    [[ "$cmd" == *"$name"* ]]
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
