#!/usr/bin/env bash
# The dashboard in a real browser: `falcon serve` (with its worker) on a free loopback port over a fresh store,
# then tests/browser/dashboard.mjs drives Debian's Chromium through playwright-core — runs of the example
# workload reach COMPLETED on the experiments page without a reload; experiment, compare, goals, goal, session
# (a 2x2 sweep: 4 cells) and history pages open with no console error, no request outside the origin, no
# serious or critical axe-core violation, and a working Tab order; then, with an admin token made, an admin signed
# in through the form opens a workload's hostile report.html (tests/browser/security.mjs): a download, no script
# runs, no request is made. Screenshots: target/test-artifacts/dashboard/.
#
#   bash scripts/check-dashboard.sh [--keep]        # FALCON=path/to/falcon (default: a debug build)
#
# Installs what it needs: Node.js and npm (apt), Chromium (apt; or FALCON_CHROMIUM), the pinned npm packages of
# tests/browser/package-lock.json (npm ci, into tests/browser/node_modules), the example's JAX venv.
# About 4 minutes once built (the example runs 6 times with 10 steps).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
cd "$repo"
keep=0
while (($#)); do
    case "$1" in
        --keep) keep=1; shift ;;
        -h|--help) sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "check-dashboard: unknown argument $1" >&2; exit 2 ;;
    esac
done
log() { printf 'check-dashboard: %s\n' "$*" >&2; }
as_root() { if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi; }

need=()
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || need+=(nodejs npm)
chromium="${FALCON_CHROMIUM:-/usr/bin/chromium}"
[[ -x "$chromium" ]] || need+=(chromium fonts-dejavu-core)
if ((${#need[@]})); then
    command -v apt-get >/dev/null 2>&1 || { log "ERROR: missing ${need[*]} and no apt-get"; exit 1; }
    log "installing ${need[*]} (apt-get)"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update >&2
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}" >&2
fi
export FALCON_CHROMIUM="$chromium"
# The pinned browser-test packages, installed again only when the lockfile changed.
stamp="tests/browser/node_modules/.lock-sha"
sum="$(sha256sum tests/browser/package-lock.json | cut -d' ' -f1)"
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$sum" ]]; then
    log "npm ci (tests/browser: playwright-core, axe-core)"
    # npm's download cache inside the clone too (nothing is cached outside it).
    (cd tests/browser && npm ci --no-audit --no-fund --loglevel=error --cache "$repo/.cache/npm" >&2)
    echo "$sum" >"$stamp"
fi
bash examples/jax_transformer/setup.sh >/dev/null

if [[ -z "${FALCON:-}" ]]; then
    cargo build --quiet --locked -p falcon-cli
    FALCON="$repo/target/debug/falcon"
fi
# shellcheck source=lib/scratch-serve.sh
source "$here/lib/scratch-serve.sh"
scratch_store 200
# The example with 10 steps, profiled over steps 4-6 (the workload's paths are relative to the repository).
for side in baseline variant; do
    sed -e 's/^  steps: 30$/  steps: 10/' -e 's/^profile: .*$/profile: {enabled: true, start_step: 4, num_steps: 3}/' \
        "examples/jax_transformer/$side.yaml" >"$store/$side.yaml"
    grep -q '^  steps: 10$' "$store/$side.yaml" || { log "ERROR: $side.yaml no longer has 'steps: 30' to shorten"; exit 1; }
done

scratch_serve
out="$repo/target/test-artifacts/dashboard"
mkdir -p "$out"
log "falcon serve at $url; screenshots into target/test-artifacts/dashboard/"
if ! node tests/browser/dashboard.mjs "$url" "$store" "$out"; then
    log "failed; the server's log:"
    grep -v ' 200 ' "$store/serve.log" | tail -40 >&2 || true
    exit 1
fi
log "pages passed"
# Then the server is closed with an admin token and an admin opens a hostile artifact (tests/browser/security.mjs).
token="$(f token create --name browser-admin --scope admin --json | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).token))')"
if ! node tests/browser/security.mjs "$url" "$store" "$out" "$token"; then
    log "the hostile-artifact check failed; the server's log:"
    grep -v ' 200 ' "$store/serve.log" | tail -40 >&2 || true
    exit 1
fi
log "passed"
