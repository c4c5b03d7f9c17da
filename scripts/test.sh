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

# The HTML-report test renders pages in headless Chromium: install Debian's when no browser is there.
have_browser() {
    [[ -n "${FALCON_CHROMIUM:-}" ]] && return 0
    local b
    for b in chromium chromium-browser google-chrome google-chrome-stable; do
        command -v "$b" >/dev/null 2>&1 && return 0
    done
    return 1
}
if ! have_browser; then
    command -v apt-get >/dev/null 2>&1 \
        || { echo "test: ERROR: no Chromium for the HTML-report test and no apt-get: install the package chromium (or set FALCON_CHROMIUM)" >&2; exit 1; }
    as_root=()
    [[ $(id -u) -eq 0 ]] || as_root=(sudo)
    echo "test: installing chromium and fonts-dejavu-core (apt-get) for the HTML-report test" >&2
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update >&2
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium fonts-dejavu-core >&2 \
        || { echo "test: ERROR: apt-get install chromium failed: install the package chromium (or set FALCON_CHROMIUM)" >&2; exit 1; }
    have_browser || { echo "test: ERROR: chromium installed but not on PATH" >&2; exit 1; }
fi

# As root, Falcon runs each job as a user of its own; the tests' jobs read scripts and captures from this checkout,
# so those users must be able to: a private checkout is opened to them, one under a private folder is refused now
# rather than in a hundred failed jobs.
# shellcheck source=lib/job-users.sh
source "$ROOT/scripts/lib/job-users.sh"
if ! job_users_can_read "$ROOT" test; then
    echo "test: ERROR: other users cannot read $ROOT (a folder above it is private, such as /root): the tests' jobs run" \
        "as users of their own and read files of this checkout; clone it where others may enter (e.g. /opt, /tmp)" >&2
    exit 1
fi

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
