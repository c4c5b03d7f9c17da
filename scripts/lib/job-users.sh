# Sourced by scripts/test.sh and scripts/quickstart.sh. As root, Falcon runs each job as a user of its own
# (docs/guide/jobs.md, "Workload isolation"), and those users must be able to read this checkout: the example's code,
# the tests' scripts and captures, the `falcon` binary a fan-out job runs. A checkout made with `mktemp -d` is its
# owner's alone (mode 0700): `job_users_can_read ROOT LABEL` lets other users enter it (chmod o+x, saying so; its files
# are readable already, Falcon's own data dir and falcon.toml stay private) and then says whether they can read it —
# they cannot when a folder above it is private too (such as /root), which it does not change.
job_users_can_read() {
    local root="$1" label="$2" probe="$1/examples/goodput/workload.py"
    [[ $(id -u) -eq 0 ]] && command -v setpriv >/dev/null 2>&1 || return 0
    as_other() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
    as_other test -r "$probe" && return 0
    if [[ $(( 8#$(stat -c %a "$root") & 1 )) -eq 0 ]] && as_other test -x "$(dirname "$root")"; then
        echo "$label: letting other users enter $root (chmod o+x): jobs run as users of their own and read this checkout" >&2
        chmod o+x "$root"
    fi
    as_other test -r "$probe"
}
