# shellcheck shell=bash
# Sourced by scripts/services.sh: MariaDB on 127.0.0.1:3306 (installed with apt-get when missing; started
# only when nothing answers, and then stopped by `down`).

MARIADB_MARKER="$CACHE/started-mariadb"
MARIADB_PIDFILE="$CACHE/mariadb.pid"
MARIADB_LOG="$CACHE/mariadb.log"
MYSQL_HOST=127.0.0.1
MYSQL_PORT=3306
MARIADBD=/usr/sbin/mariadbd
MARIADB_WAIT_S=60

mariadb_client() {
    if command -v mariadb >/dev/null 2>&1; then echo mariadb
    elif command -v mysql >/dev/null 2>&1; then echo mysql
    else echo ""
    fi
}

mariadb_ok() {
    local c
    c="$(mariadb_client)"
    [[ -n "$c" ]] || return 1
    "$c" -uroot -h"$MYSQL_HOST" -P"$MYSQL_PORT" --protocol=tcp --connect-timeout=2 \
        -e 'select 1' >/dev/null 2>&1
}

mariadb_error() { # the client's error message, for diagnostics
    local c
    c="$(mariadb_client)"
    [[ -n "$c" ]] || { echo "no mariadb/mysql client installed"; return; }
    "$c" -uroot -h"$MYSQL_HOST" -P"$MYSQL_PORT" --protocol=tcp --connect-timeout=2 \
        -e 'select 1' 2>&1 >/dev/null | head -n 3 || true
}

mariadb_server_log() { # server error log configured in my.cnf, if any
    local l
    l="$(my_print_defaults mysqld mariadbd server 2>/dev/null | sed -n 's/^--log[-_]error=//p' | tail -n 1)"
    [[ -n "$l" ]] && echo "$l"
    return 0
}

mariadb_running_pids() { pgrep -x mariadbd 2>/dev/null || pgrep -x mysqld 2>/dev/null || true; }

started_mariadb_pid() { # pid recorded by us, if it is still our mariadbd
    local pid
    [[ -f "$MARIADB_MARKER" ]] || return 1
    pid="$(head -n 1 "$MARIADB_MARKER" 2>/dev/null || true)"
    pid_is "$pid" mariadbd || return 1
    echo "$pid"
}

install_mariadb() {
    log "MariaDB is not installed; installing mariadb-server (apt-get)"
    command -v apt-get >/dev/null 2>&1 || die "MariaDB is not installed and apt-get is unavailable; install mariadb-server manually"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update \
        || die "apt-get update failed (needed to install mariadb-server)"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        mariadb-server mariadb-client \
        || die "apt-get install mariadb-server failed"
    [[ -x "$MARIADBD" ]] || die "mariadb-server installed but $MARIADBD is missing"
}

# Fresh Debian installs authenticate root@localhost via unix_socket only, which
# cannot work over TCP.  Allow a password-less root login from 127.0.0.1 too.
# Only done for a server this script installed/started, or in CI.
fix_root_tcp_login() {
    local c
    c="$(mariadb_client)"
    [[ -n "$c" ]] || return 1
    as_root "$c" -uroot --protocol=socket -e 'select 1' >/dev/null 2>&1 || return 1
    log "MariaDB: enabling password-less root login over TCP (root@localhost, root@127.0.0.1)"
    as_root "$c" -uroot --protocol=socket -e "
        ALTER USER 'root'@'localhost' IDENTIFIED VIA unix_socket OR mysql_native_password USING PASSWORD('');
        CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '';
        GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;" >&2
}

wait_mariadb() { # seconds allow_fix
    local deadline=$((SECONDS + $1)) allow_fix="$2" fixed=0
    while ((SECONDS < deadline)); do
        mariadb_ok && return 0
        if [[ "$allow_fix" == 1 && $fixed == 0 ]] && fix_root_tcp_login; then
            fixed=1
            continue
        fi
        sleep 1
    done
    mariadb_ok
}

mariadb_up() {
    if mariadb_ok; then
        if started_mariadb_pid >/dev/null; then
            log "MariaDB: answering on $MYSQL_HOST:$MYSQL_PORT (started earlier by this script, pid $(started_mariadb_pid))"
        else
            rm -f "$MARIADB_MARKER" "$MARIADB_PIDFILE"
            log "MariaDB: already answering on $MYSQL_HOST:$MYSQL_PORT (not started by this script; will be left running)"
        fi
        return 0
    fi

    local installed_now=0
    if [[ ! -x "$MARIADBD" ]]; then
        install_mariadb
        installed_now=1
        # The package's postinst may have started it already.
        if wait_mariadb 5 1; then
            log "MariaDB: answering after package install"
            return 0
        fi
    fi
    [[ -n "$(mariadb_client)" ]] || die "MariaDB server is installed but no client (mariadb/mysql); install mariadb-client"

    local allow_fix=0
    [[ $installed_now == 1 || "${CI:-}" == true ]] && allow_fix=1

    local running
    running="$(mariadb_running_pids | tr '\n' ' ')"
    if [[ -n "${running// /}" ]]; then
        # Someone else's server is up (maybe still starting): wait for it, never start a second one.
        log "MariaDB: a server process is running (pid ${running% }) but not answering yet; waiting up to ${MARIADB_WAIT_S}s"
        if ! wait_mariadb "$MARIADB_WAIT_S" "$allow_fix"; then
            local slog; slog="$(mariadb_server_log)"
            [[ -n "$slog" ]] && tail_log "$slog"
            die "MariaDB (pid ${running% }) does not accept 'root' without password on $MYSQL_HOST:$MYSQL_PORT: $(mariadb_error)${slog:+ (server log: $slog)}"
        fi
        return 0
    fi

    log "MariaDB: not running; starting $MARIADBD (log: $MARIADB_LOG)"
    as_root install -d -m 0755 -o mysql -g mysql /run/mysqld 2>/dev/null || as_root mkdir -p /run/mysqld
    local datadir
    datadir="$(my_print_defaults mysqld mariadbd server 2>/dev/null | sed -n 's/^--datadir=//p' | tail -n 1)"
    datadir="${datadir:-/var/lib/mysql}"
    : >"$MARIADB_LOG"
    if [[ ! -d "$datadir/mysql" ]]; then
        log "MariaDB: initialising empty data directory $datadir"
        as_root mariadb-install-db --user=mysql --datadir="$datadir" >>"$MARIADB_LOG" 2>&1 \
            || { tail_log "$MARIADB_LOG"; die "mariadb-install-db failed (log: $MARIADB_LOG)"; }
    fi
    as_root start-stop-daemon --start --oknodo --background \
        --make-pidfile --pidfile "$MARIADB_PIDFILE" --output "$MARIADB_LOG" \
        --exec "$MARIADBD" -- --user=mysql \
        || { tail_log "$MARIADB_LOG"; die "start-stop-daemon could not start $MARIADBD (log: $MARIADB_LOG)"; }
    local pid
    pid="$(cat "$MARIADB_PIDFILE" 2>/dev/null || true)"
    echo "$pid" >"$MARIADB_MARKER"
    log "MariaDB: started (pid $pid); waiting up to ${MARIADB_WAIT_S}s for $MYSQL_HOST:$MYSQL_PORT"
    if ! wait_mariadb "$MARIADB_WAIT_S" 1; then
        local slog; slog="$(mariadb_server_log)"
        tail_log "$MARIADB_LOG"
        [[ -n "$slog" ]] && tail_log "$slog"
        die "MariaDB started (pid $pid) but does not answer as root on $MYSQL_HOST:$MYSQL_PORT within ${MARIADB_WAIT_S}s: $(mariadb_error) (logs: $MARIADB_LOG${slog:+, $slog})"
    fi
    log "MariaDB: ready"
}

mariadb_down() {
    local pid
    if pid="$(started_mariadb_pid)"; then
        log "MariaDB: stopping pid $pid (started by this script)"
        as_root kill -TERM "$pid" 2>/dev/null || true
        local deadline=$((SECONDS + 60))
        while pid_is "$pid" mariadbd && ((SECONDS < deadline)); do sleep 0.5; done
        if pid_is "$pid" mariadbd; then
            log "MariaDB: pid $pid still alive after 60s; sending KILL"
            as_root kill -KILL "$pid" 2>/dev/null || true
        fi
    elif [[ -f "$MARIADB_MARKER" ]]; then
        log "MariaDB: the server this script started is already gone"
    else
        log "MariaDB: not started by this script; leaving it alone"
    fi
    rm -f "$MARIADB_MARKER" "$MARIADB_PIDFILE"
}
