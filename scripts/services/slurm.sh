# shellcheck shell=bash
# Sourced by scripts/services.sh: a single-node Slurm cluster private to this clone (slurmctld and slurmd on
# free ports, its slurm.conf under .cache/slurm/), and its probe (an sbatch job that must reach COMPLETED).

# Single-node Slurm (root, no systemd, no munge): see the comment above slurm_write_conf.
SLURM_DIR="$CACHE/slurm"
SLURM_CONF_FILE="$SLURM_DIR/slurm.conf"   # not SLURM_CONF: that name is the clients' env var
SLURMCTLD_PIDFILE="$SLURM_DIR/slurmctld.pid"
SLURMD_PIDFILE="$SLURM_DIR/slurmd.pid"
SLURM_LOG_DIR="$SLURM_DIR/log"
SLURM_PARTITION=debug
SLURM_NODE=localhost
SLURM_WAIT_S=30
SLURM_PROBE_WAIT_S=30

slurm_bin() { # name -> path (daemons live in /usr/sbin, which a non-root PATH may lack)
    if command -v "$1" 2>/dev/null; then return 0; fi
    [[ -x "/usr/sbin/$1" ]] && { echo "/usr/sbin/$1"; return 0; }
    return 1
}

slurm_installed() {
    local b
    for b in slurmctld slurmd sbatch sinfo squeue scancel scontrol; do
        slurm_bin "$b" >/dev/null || return 1
    done
}

install_slurm() {
    log "Slurm: slurmctld/slurmd/sbatch not installed; installing slurm-wlm (apt-get)"
    command -v apt-get >/dev/null 2>&1 || die "Slurm is not installed and apt-get is unavailable; install slurm-wlm manually"
    if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends slurm-wlm >&2; then
        log "Slurm: apt-get install failed; running apt-get update and retrying"
        as_root env DEBIAN_FRONTEND=noninteractive apt-get update >&2 \
            || die "apt-get update failed (needed to install slurm-wlm)"
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends slurm-wlm >&2 \
            || die "apt-get install slurm-wlm failed"
    fi
    slurm_installed || die "slurm-wlm installed but slurmctld/slurmd/sbatch are still missing"
}

slurm_client() { # run a Slurm client against our cluster only
    local bin
    bin="$(slurm_bin "$1")" || die "$1 not found (apt-get install slurm-wlm)"
    shift
    SLURM_CONF="$SLURM_CONF_FILE" "$bin" "$@"
}

# The daemons run in the foreground (-D) in their own session, started by this
# script; the pid files below are written by us and name that exact command line,
# so `down` never touches a system Slurm or another clone's daemons.
slurmctld_args="-D -f $SLURM_CONF_FILE"
slurmd_args="-D -N $SLURM_NODE -f $SLURM_CONF_FILE"
slurmctld_match="slurmctld $slurmctld_args "   # substring of /proc/<pid>/cmdline (NULs as spaces), any bin dir
slurmd_match="slurmd $slurmd_args "

slurm_pid() { # pidfile cmdline -> pid if that process is alive and is ours
    local pid
    [[ -f "$1" ]] || return 1
    pid="$(head -n 1 "$1" 2>/dev/null || true)"
    pid_is "$pid" "$2" || return 1
    echo "$pid"
}
slurmctld_pid() { slurm_pid "$SLURMCTLD_PIDFILE" "$slurmctld_match"; }
slurmd_pid() { slurm_pid "$SLURMD_PIDFILE" "$slurmd_match"; }

slurm_conf_value() { # key -> value from our slurm.conf
    sed -n "s/^$1=//p" "$SLURM_CONF_FILE" 2>/dev/null | head -n 1
}

slurm_node_state() { # sinfo's long state of our node ("idle", "mixed", "idle*", "drained", ...)
    # sinfo retries an unreachable slurmctld for ~10 s; do not wait that long.
    SLURM_CONF="$SLURM_CONF_FILE" timeout 5 "$(slurm_bin sinfo)" -h -o %T 2>/dev/null | head -n 1
}

slurm_ready() {
    case "$(slurm_node_state)" in
        idle|mixed|allocated) return 0 ;;
        *) return 1 ;;
    esac
}

slurm_ports() { # [ctld_port slurmd_port] -> "ctld_port slurmd_port", both free on all interfaces
    # Keeps the previous ports when they are still free (stable slurm.conf), else two new ones.
    python3 - "$@" <<'PY'
import socket, sys
def grab(port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as slurmctld/slurmd do: TIME_WAIT is fine
    try:
        s.bind(("", port))
        return s
    except OSError:
        s.close()
        return None
old = [int(a) for a in sys.argv[1:3] if a.isdigit()]
socks = [grab(p) for p in old] if len(old) == 2 and old[0] != old[1] else [None]
if not all(socks):
    socks = [grab(0), grab(0)]   # held together, so the kernel hands out two distinct ports
print(*(s.getsockname()[1] for s in socks))
PY
}

# Single node "localhost" with all CPUs, partition "debug".  Known to work as root
# without systemd/cgroups/munge on Slurm 22.05 (observed outputs: crates/falcon-job/tests/data/slurm/):
# auth/none (gone in Slurm 23.11), proctrack/linuxproc + task/none (the cgroup
# plugins drain the node in containers), no accounting daemon; finished jobs are
# kept by slurmctld for MinJobAge seconds (visible to squeue) and appended to the
# jobcomp file.  Everything, ports included, is private to this clone.
slurm_write_conf() { # ctld_port slurmd_port
    local tmp="$SLURM_CONF_FILE.tmp"
    cat >"$tmp" <<EOF
# Written by scripts/services.sh on each fresh start; edits are lost.
ClusterName=falcontest
SlurmctldHost=localhost
SlurmctldPort=$1
SlurmdPort=$2
SlurmUser=root
SlurmdUser=root
AuthType=auth/none
CredType=cred/none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=task=1
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$SLURM_LOG_DIR/jobcomp.txt
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
ReturnToService=2
MinJobAge=3600
KillWait=5
MpiDefault=none
MailProg=/bin/true
StateSaveLocation=$SLURM_DIR/state
SlurmdSpoolDir=$SLURM_DIR/spool
SlurmctldPidFile=$SLURM_DIR/run/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/run/slurmd.pid
SlurmctldLogFile=$SLURM_LOG_DIR/slurmctld.log
SlurmdLogFile=$SLURM_LOG_DIR/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
SlurmdParameters=config_overrides
NodeName=$SLURM_NODE NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=$SLURM_PARTITION Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
    mv -f "$tmp" "$SLURM_CONF_FILE"
}

slurm_logs() { # this start's daemon output (in -D mode it repeats the *.log lines, plus fatal config errors)
    tail_log "$SLURM_LOG_DIR/slurmctld.stderr"
    tail_log "$SLURM_LOG_DIR/slurmd.stderr"
}

slurm_spawn() { # pidfile stderr-log argv... -> starts argv in its own session, records its pid
    local pidfile="$1" out="$2" pid
    shift 2
    pid="$(as_root python3 - "$out" "$@" <<'PY'
import subprocess, sys
log, argv = sys.argv[1], sys.argv[2:]
with open(log, "ab") as out:
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                         start_new_session=True, close_fds=True)
print(p.pid)
PY
    )" || die "failed to spawn $1 (log: $out)"
    echo "$pid" >"$pidfile"
    echo "$pid"
}

slurm_up() {
    local cpid dpid
    if [[ -f "$SLURM_CONF_FILE" ]] && cpid="$(slurmctld_pid)" && dpid="$(slurmd_pid)" && slurm_ready; then
        log "Slurm: already running (slurmctld pid $cpid, slurmd pid $dpid, port $(slurm_conf_value SlurmctldPort)); reusing"
        return 0
    fi
    slurm_down quiet

    slurm_installed || install_slurm
    mkdir -p "$SLURM_DIR/state" "$SLURM_DIR/spool" "$SLURM_DIR/run" "$SLURM_LOG_DIR"
    local ports
    ports="$(slurm_ports "$(slurm_conf_value SlurmctldPort)" "$(slurm_conf_value SlurmdPort)")" \
        || die "could not find two free TCP ports for slurmctld/slurmd"
    # shellcheck disable=SC2086  # two words on purpose
    slurm_write_conf $ports
    : >"$SLURM_LOG_DIR/slurmctld.stderr"
    : >"$SLURM_LOG_DIR/slurmd.stderr"

    local t0=$EPOCHREALTIME
    log "Slurm: starting slurmctld + slurmd (ports ${ports// //}, conf: $SLURM_CONF_FILE, logs: $SLURM_LOG_DIR)"
    # shellcheck disable=SC2086  # the argument lists are plain words
    cpid="$(slurm_spawn "$SLURMCTLD_PIDFILE" "$SLURM_LOG_DIR/slurmctld.stderr" "$(slurm_bin slurmctld)" $slurmctld_args)"
    # shellcheck disable=SC2086
    dpid="$(slurm_spawn "$SLURMD_PIDFILE" "$SLURM_LOG_DIR/slurmd.stderr" "$(slurm_bin slurmd)" $slurmd_args)"

    local deadline=$((SECONDS + SLURM_WAIT_S)) resumed=0 state
    while :; do
        if ! slurmctld_pid >/dev/null || ! slurmd_pid >/dev/null; then
            slurm_logs
            slurm_down quiet
            die "Slurm: slurmctld (pid $cpid) or slurmd (pid $dpid) exited during startup (logs: $SLURM_LOG_DIR)"
        fi
        state="$(slurm_node_state)"
        [[ "$state" =~ ^(idle|mixed|allocated)$ ]] && break
        # A node left drained/down by an earlier run (state is kept in $SLURM_DIR/state): bring it back once.
        if [[ $resumed == 0 && "$state" =~ ^(drain|down) ]]; then
            log "Slurm: node $SLURM_NODE is '$state' from an earlier run; resuming it"
            slurm_client scontrol update NodeName="$SLURM_NODE" State=RESUME >&2 || true
            resumed=1
        fi
        if ((SECONDS >= deadline)); then
            slurm_logs
            slurm_down quiet
            die "Slurm: node $SLURM_NODE not idle within ${SLURM_WAIT_S}s (sinfo state: '${state:-no answer}'; logs: $SLURM_LOG_DIR)"
        fi
        sleep 0.2
    done
    log "Slurm: ready after $(awk "BEGIN { printf \"%.1f\", $EPOCHREALTIME - $t0 }")s (slurmctld pid $cpid, slurmd pid $dpid, partition $SLURM_PARTITION, $(nproc) CPUs)"
}

slurm_stop_pid() { # label pid cmdline-substring
    local label="$1" pid="$2" cmdline="$3"
    as_root kill -TERM "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + 15))
    while pid_is "$pid" "$cmdline" && ((SECONDS < deadline)); do sleep 0.2; done
    if pid_is "$pid" "$cmdline"; then
        log "Slurm: $label pid $pid still alive after 15s; sending KILL"
        as_root kill -KILL "$pid" 2>/dev/null || true
    fi
}

slurm_down() {
    local quiet="${1:-}" cpid dpid ids
    cpid="$(slurmctld_pid || true)"
    dpid="$(slurmd_pid || true)"
    if [[ -z "$cpid" && -z "$dpid" ]]; then
        [[ -n "$quiet" ]] || log "Slurm: not running"
        rm -f "$SLURMCTLD_PIDFILE" "$SLURMD_PIDFILE"
        return 0
    fi
    # Job steps (slurmstepd + the job's processes) outlive slurmd: cancel what is still active first.
    if [[ -n "$cpid" && -n "$dpid" ]]; then
        ids="$(slurm_client squeue -h -o %i -t PENDING,RUNNING,SUSPENDED,CONFIGURING 2>/dev/null | tr '\n' ' ' || true)"
        if [[ -n "${ids// /}" ]]; then
            [[ -n "$quiet" ]] || log "Slurm: cancelling active jobs: ${ids% }"
            # shellcheck disable=SC2086
            slurm_client scancel $ids >&2 2>/dev/null || true
            local deadline=$((SECONDS + 15))
            while ((SECONDS < deadline)) && [[ -n "$(slurm_client squeue -h -o %i -t PENDING,RUNNING,SUSPENDED,CONFIGURING,COMPLETING 2>/dev/null || true)" ]]; do
                sleep 0.5
            done
        fi
    fi
    if [[ -n "$dpid" ]]; then
        [[ -n "$quiet" ]] || log "Slurm: stopping slurmd pid $dpid"
        slurm_stop_pid slurmd "$dpid" "$slurmd_match"
    fi
    if [[ -n "$cpid" ]]; then
        [[ -n "$quiet" ]] || log "Slurm: stopping slurmctld pid $cpid"
        slurm_stop_pid slurmctld "$cpid" "$slurmctld_match"
    fi
    rm -f "$SLURMCTLD_PIDFILE" "$SLURMD_PIDFILE"
}

slurm_status() {
    local cpid dpid state
    cpid="$(slurmctld_pid || true)"
    dpid="$(slurmd_pid || true)"
    [[ -n "$cpid" ]] && cpid="pid $cpid"
    [[ -n "$dpid" ]] && dpid="pid $dpid"
    if [[ -z "$cpid" && -z "$dpid" ]]; then
        echo "slurm: not running"
        return 0
    fi
    state="$(slurm_node_state)"
    echo "slurm: slurmctld ${cpid:-NOT running} (port $(slurm_conf_value SlurmctldPort)), slurmd ${dpid:-NOT running} (port $(slurm_conf_value SlurmdPort)), node $SLURM_NODE ${state:-not answering}, partition $SLURM_PARTITION (conf: $SLURM_CONF_FILE, logs: $SLURM_LOG_DIR)"
}

slurm_probe() {
    if ! slurmctld_pid >/dev/null || ! slurmd_pid >/dev/null; then
        die "Slurm is not running (run: scripts/services.sh up)"
    fi
    local out="$SLURM_DIR/probe-%j.out" id state file
    id="$(slurm_client sbatch --parsable -p "$SLURM_PARTITION" -J falcon-probe -o "$out" --wrap 'echo hi')" \
        || die "probe: sbatch failed (logs: $SLURM_LOG_DIR)"
    id="${id%%;*}"
    local deadline=$((SECONDS + SLURM_PROBE_WAIT_S))
    while state="$(slurm_client squeue -h -j "$id" -t all -o %T 2>/dev/null || true)"; [[ "$state" != COMPLETED ]]; do
        case "$state" in
            FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE|PREEMPTED)
                slurm_logs; die "probe: Slurm job $id ended $state" ;;
        esac
        if ((SECONDS >= deadline)); then
            slurm_logs
            die "probe: Slurm job $id not COMPLETED within ${SLURM_PROBE_WAIT_S}s (state: '${state:-unknown}')"
        fi
        sleep 0.2
    done
    file="${out//%j/$id}"
    [[ "$(cat "$file" 2>/dev/null)" == hi ]] || die "probe: Slurm job $id COMPLETED but $file does not say 'hi'"
    rm -f "$file"
    log "probe: Slurm OK (job $id COMPLETED, output read back) via $SLURM_CONF_FILE"
}
