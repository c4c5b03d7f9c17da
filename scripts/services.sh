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
# The services are in scripts/services/ (common.sh, mariadb.sh, gcs.sh, s3.sh, slurm.sh), sourced below.
#
# Everything installed or cached lives under <repo>/.cache/ (gitignored).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="$ROOT/.cache"
VENV="$CACHE/venv"
ENV_FILE="$CACHE/services.env"
LOCK_FILE="$CACHE/services.lock"

SERVICES_DIR="$ROOT/scripts/services"
# shellcheck source=services/common.sh
source "$SERVICES_DIR/common.sh"
# shellcheck source=services/mariadb.sh
source "$SERVICES_DIR/mariadb.sh"
# shellcheck source=services/gcs.sh
source "$SERVICES_DIR/gcs.sh"
# shellcheck source=services/s3.sh
source "$SERVICES_DIR/s3.sh"
# shellcheck source=services/slurm.sh
source "$SERVICES_DIR/slurm.sh"

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
