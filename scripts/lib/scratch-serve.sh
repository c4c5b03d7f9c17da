# Sourced by the scripts that test `falcon serve` over a scratch store (check-api.sh, check-dashboard.sh).
# Expects FALCON (the binary), keep (1: leave the store for a look) and log(). Provides:
#   scratch_store POLL_MS   a fresh store in $store (falcon.toml with that poll interval); the EXIT trap stops the
#                           server and removes the store
#   f ARGS…                 falcon on that store
#   scratch_serve ARGS…     `falcon serve ARGS… --bind 127.0.0.1:0` in the background; sets server (falcon's own
#                           PID, so stopping it stops falcon) and url once it listens
#   scratch_stop            stops the server and waits for it

f() { "$FALCON" --config "$store/falcon.toml" "$@"; }

scratch_cleanup() {
    [[ -n "${server:-}" ]] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
    ((keep)) && log "the store is in $store" || rm -rf "$store"
}

scratch_store() {
    store="$(mktemp -d)"
    chmod 755 "$store"   # as root, jobs run as users of their own, which must enter it (docs/guide/jobs.md, "Workload isolation")
    server=""
    trap scratch_cleanup EXIT
    f init >/dev/null
    printf '\n[jobs]\npoll_interval_ms = %s\n' "$1" >>"$store/falcon.toml"
}

scratch_serve() {
    # Directly, not through f: $! is then falcon itself.
    "$FALCON" --config "$store/falcon.toml" serve "$@" --bind 127.0.0.1:0 >"$store/serve.out" 2>"$store/serve.log" &
    server=$!
    url=""
    for _ in $(seq 100); do
        url="$(grep -o 'http://127.0.0.1:[0-9]*' "$store/serve.log" | head -1 || true)"
        [[ -n "$url" ]] && return 0
        sleep 0.1
    done
    log "falcon serve did not start:"
    cat "$store/serve.log" >&2
    exit 1
}

scratch_stop() {
    kill "$server"
    wait "$server" || true
    server=""
}
