#!/usr/bin/env bash
# Run all of Falcon's tests against real services:
#   scripts/test.sh [extra cargo test args...]
# Starts MariaDB + the GCS emulator (scripts/services.sh up), exports
# FALCON_TEST_MYSQL_URL / FALCON_TEST_GCS_ENDPOINT, runs
# `cargo test --workspace "$@"`, and always stops the services
# again on exit.  Exits with cargo's status.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

# shellcheck disable=SC2329  # invoked via trap
cleanup() {
    bash "$ROOT/scripts/services.sh" down || echo "test: warning: 'scripts/services.sh down' failed" >&2
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

bash "$ROOT/scripts/services.sh" up
# shellcheck source=/dev/null
source "$ROOT/.cache/services.env"

if [[ -z "${FALCON_TEST_MYSQL_URL:-}" || -z "${FALCON_TEST_GCS_ENDPOINT:-}" ]]; then
    echo "test: ERROR: .cache/services.env did not set FALCON_TEST_MYSQL_URL and FALCON_TEST_GCS_ENDPOINT" >&2
    exit 1
fi
echo "test: FALCON_TEST_MYSQL_URL=$FALCON_TEST_MYSQL_URL" >&2
echo "test: FALCON_TEST_GCS_ENDPOINT=$FALCON_TEST_GCS_ENDPOINT" >&2
echo "test: running: cargo test --workspace $*" >&2

status=0
cargo test --workspace "$@" || status=$?
echo "test: cargo test exited with status $status" >&2
exit "$status"
