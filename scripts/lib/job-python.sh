# Sourced by the example venv scripts: as root, Falcon runs each job as a user of its own ([jobs] isolation), so a
# venv's interpreter must be one such a user may run (a pyenv python under /root is not).
#
#   job_python VENV LABEL    # exports PYTHON (the first python3 an unprivileged user can start) unless it is set,
#                            # and removes VENV when it was made from a python that user cannot run
job_python() {
    local venv="$1" label="$2" candidate real
    as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
    [[ $(id -u) -eq 0 ]] && command -v setpriv >/dev/null 2>&1 || return 0
    if [[ -z "${PYTHON:-}" ]]; then
        for candidate in "$(command -v python3 || true)" /usr/bin/python3 /usr/local/bin/python3; do
            real="$(readlink -f "$candidate" 2>/dev/null || true)"
            if [[ -n "$real" ]] && as_nobody "$real" -c 'import venv' >/dev/null 2>&1; then
                export PYTHON="$real"
                break
            fi
        done
    fi
    if [[ -x "$venv/bin/python" ]] && ! as_nobody "$venv/bin/python" -c 'import sys' >/dev/null 2>&1; then
        echo "$label: $venv was made from a python other users cannot run; making it again" >&2
        rm -rf "$venv"
    fi
}
