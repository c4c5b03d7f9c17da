#!/usr/bin/env bash
# Drives `falcon mcp` with the official Python MCP client (PyPI `mcp`, pinned in scripts/mcp/requirements.txt), as
# an agent harness does: initialize; the tools and prompts listed; profile_analyze on the TPU fixture (its duty
# cycle equal to `falcon profile analyze --json`'s); two experiments submitted with `wait` reaching COMPLETED with
# progress notifications; every other tool on the repository's test data, each result valid against its output
# schema and equal to the CLI's `--json` object where one exists; a missing experiment as a tool error; and
# `--read-only` without exp_submit (tests/mcp/check_mcp.py lists every check).
#
#   bash scripts/check-mcp.sh [--keep]     # FALCON=path/to/falcon (default: a debug build)
#
# Over a scratch store (local jobs, SQLite). Installs .cache/mcp-venv on first use (about 15 s); the checks take
# about 10 s.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
cd "$repo"
keep=0
while (($#)); do
    case "$1" in
        --keep) keep=1; shift ;;
        -h|--help) sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "check-mcp: unknown argument $1" >&2; exit 2 ;;
    esac
done
log() { printf 'check-mcp: %s\n' "$*" >&2; }

if [[ -z "${FALCON:-}" ]]; then
    cargo build --quiet --locked -p falcon-cli
    FALCON="$repo/target/debug/falcon"
fi
python="$(bash scripts/pinned-venv.sh "$repo/.cache/mcp-venv" scripts/mcp/requirements.txt 'import mcp.client.stdio' mcp)"

# shellcheck source=lib/scratch-serve.sh
source "$here/lib/scratch-serve.sh"
scratch_store 200
# Bounded: a server that stops answering fails the check instead of hanging CI.
timeout 300 "$python" tests/mcp/check_mcp.py "$FALCON" "$store/falcon.toml" "$repo" 2> >(tee "$store/check.log" >&2) || {
    rc=$?
    log "failed (exit $rc)"
    keep=1
    exit "$rc"
}
