#!/usr/bin/env bash
# Re-creates the fixtures in this folder from a REAL Slurm cluster:
#
#   bash scripts/services.sh up
#   bash crates/falcon-job/tests/data/slurm/capture.sh [OUTDIR]   # ~80 s (one job must hit its 1-minute limit)
#
# Talks to the single-node cluster of scripts/services.sh (FALCON_TEST_SLURM_CONF from
# .cache/services.env).  Job ids in README.md assume a fresh cluster (ids from 1): stop it
# with `scripts/services.sh down` and remove .cache/slurm/state first.  Needs nproc >= 2.
# Every file written has this clone's absolute path replaced by <REPO>.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../../../.." && pwd)"
OUT="${1:-$HERE}"
# shellcheck source=/dev/null
source "$ROOT/.cache/services.env" 2>/dev/null || true
[[ -n "${FALCON_TEST_SLURM_CONF:-}" ]] || { echo "capture: run scripts/services.sh up first" >&2; exit 1; }
export SLURM_CONF="$FALCON_TEST_SLURM_CONF"
W="$ROOT/.cache/slurm/jobs"          # the jobs' working directory (default output slurm-%j.out lands here)
mkdir -p "$OUT" "$W"
cd "$W" || exit 1
NP=$(nproc)

say() { printf 'capture: [%s] %s\n' "$(date +%T)" "$*" >&2; }
clean() { sed -e "s#${ROOT//\//\\\\/}#<REPO>#g" -e "s#$ROOT#<REPO>#g"; }   # JSON escapes '/' as '\/'
snap() { squeue --json "${@:2}" | clean >"$OUT/$1.json"; say "$1: $(squeue -h -t all -o '%i:%j:%T:%r' | tr '\n' ' ')"; }
cap() { # name cmd... -> name.stdout / name.stderr / name.rc
    local n=$1 rc; shift
    "$@" >"$OUT/$n.stdout.tmp" 2>"$OUT/$n.stderr.tmp"; rc=$?
    clean <"$OUT/$n.stdout.tmp" >"$OUT/$n.stdout"; clean <"$OUT/$n.stderr.tmp" >"$OUT/$n.stderr"
    rm -f "$OUT/$n.stdout.tmp" "$OUT/$n.stderr.tmp"
    echo "$rc" >"$OUT/$n.rc"
    say "$n: rc=$rc"
}
st() { squeue -h -j "$1" -t all -o %T 2>/dev/null; }
wait_for() { # id state-regex seconds
    local d=$((SECONDS + $3))
    until [[ "$(st "$1")" =~ ^($2)$ ]]; do
        ((SECONDS >= d)) && { say "gave up waiting for job $1 to be $2 (is '$(st "$1")')"; return 1; }
        sleep 0.3
    done
}

say "slurm: $(sinfo --version), $NP CPUs, conf $SLURM_CONF"
snap squeue_empty

# PENDING: a job holding every CPU, one more behind it (reason Resources), one held (JobHeldUser).
cap sbatch_parsable sbatch --parsable -J hog -c "$NP" --wrap 'sleep 30'
hog=$(cut -d';' -f1 "$OUT/sbatch_parsable.stdout")
cap sbatch_plain sbatch -J pend -c 1 -o "$W/%x-%j.out" --wrap 'echo pending-then-ran; sleep 3'
pend=$(awk '{print $4}' "$OUT/sbatch_plain.stdout")
held=$(sbatch --parsable -J held --hold --wrap 'true')
wait_for "$hog" RUNNING 15
d=$((SECONDS + 20)); until [[ "$(squeue -h -j "$pend" -o %r)" == Resources ]] || ((SECONDS >= d)); do sleep 0.3; done
snap squeue_pending
snap squeue_json_j_filter_ignored -j "$pend"
cap squeue_text_pending squeue -t all -o '%i %j %T %r'

# CANCELLED (running and pending), then the pending job RUNNING -> COMPLETED.
scancel "$hog"; scancel "$held"
wait_for "$hog" CANCELLED 20
wait_for "$pend" RUNNING 20
snap squeue_running
wait_for "$pend" COMPLETED 20

# FAILED (exit 3), killed by SIGKILL, TIMEOUT (1-minute limit; Slurm checks limits about every 30 s).
to=$(sbatch --parsable -J timeout -t 0:01 --wrap 'sleep 120')
fail=$(sbatch --parsable -J exit3 --wrap 'exit 3')
k9=$(sbatch --parsable -J kill9 --wrap 'kill -9 $$')
wait_for "$fail" FAILED 30
wait_for "$k9" 'FAILED|CANCELLED|COMPLETED' 30
wait_for "$to" RUNNING 30
snap squeue_failed
say "waiting up to 150 s for job $to to hit its time limit"
wait_for "$to" TIMEOUT 150
snap squeue_mixed_terminal

# NODE_FAIL: set the node DOWN under two running jobs; --no-requeue ends NODE_FAIL, the default requeues.
nf=$(sbatch --parsable -J nodefail --no-requeue --wrap 'sleep 120')
rq=$(sbatch --parsable -J requeued --wrap 'sleep 120')
wait_for "$nf" RUNNING 20; wait_for "$rq" RUNNING 20
scontrol update NodeName=localhost State=DOWN Reason=fixture-node-fail
wait_for "$nf" NODE_FAIL 30
sleep 2
snap squeue_node_fail
# ReturnToService=2 brings the node back by itself; RESUME only if it is still down.
[[ "$(sinfo -h -o %T)" == down* ]] && scontrol update NodeName=localhost State=RESUME
scancel "$rq"; wait_for "$rq" CANCELLED 20
snap squeue_all_terminal

cap scancel_unknown scancel 999999
cap scancel_unknown_verbose scancel -v 999999
cap squeue_unknown_id squeue -j 999999
cap squeue_unknown_id_fmt squeue -h -j 999999 -t all -o %T
cap scontrol_show_job_unknown scontrol show job 999999
cap scontrol_show_job_exit3 scontrol show job "$fail"
cap sbatch_bad_partition sbatch --parsable -p nosuch --wrap true
cap sbatch_missing_script sbatch --parsable no-such-script.sh
sleep 1
clean <"$ROOT/.cache/slurm/log/jobcomp.txt" >"$OUT/jobcomp.txt"
say "job ids: hog=$hog pend=$pend held=$held timeout=$to exit3=$fail kill9=$k9 nodefail=$nf requeued=$rq"
