# shellcheck shell=bash
# Sourced by scripts/services.sh: the S3 server (moto_server, pinned) on a free port, and its probe.

S3_PIDFILE="$CACHE/moto.pid"
S3_PORTFILE="$CACHE/moto.port"
S3_LOG="$CACHE/moto.log"
S3_WAIT_S=30

# Pinned so every clone runs the same server; override to try another release.
MOTO_SPEC="${FALCON_MOTO_SPEC:-moto[server]==5.2.5}"

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
