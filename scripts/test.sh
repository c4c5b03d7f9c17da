#!/usr/bin/env bash
# Run all of Falcon's tests against real services:
#   scripts/test.sh [extra cargo test args...]
# Starts MariaDB, the GCS emulator, an S3 server (moto) and a single-node Slurm (scripts/services.sh up),
# exports FALCON_TEST_MYSQL_URL / FALCON_TEST_GCS_ENDPOINT / FALCON_TEST_S3_ENDPOINT / FALCON_TEST_SLURM_CONF, runs
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

for var in FALCON_TEST_MYSQL_URL FALCON_TEST_GCS_ENDPOINT FALCON_TEST_S3_ENDPOINT FALCON_TEST_SLURM_CONF; do
    if [[ -z "${!var:-}" ]]; then
        echo "test: ERROR: .cache/services.env did not set $var" >&2
        exit 1
    fi
done
echo "test: FALCON_TEST_MYSQL_URL=$FALCON_TEST_MYSQL_URL" >&2
echo "test: FALCON_TEST_GCS_ENDPOINT=$FALCON_TEST_GCS_ENDPOINT" >&2
echo "test: FALCON_TEST_S3_ENDPOINT=$FALCON_TEST_S3_ENDPOINT" >&2
echo "test: FALCON_TEST_SLURM_CONF=$FALCON_TEST_SLURM_CONF" >&2
echo "test: running: cargo test --workspace $*" >&2

status=0
cargo test --workspace "$@" || status=$?
echo "test: cargo test exited with status $status" >&2
exit "$status"
