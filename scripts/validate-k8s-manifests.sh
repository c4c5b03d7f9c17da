#!/usr/bin/env bash
# Validates the Kubernetes manifests the Kubernetes backend writes (the golden files of
# crates/falcon-job/tests/it/kubernetes_backend.rs) against an independent oracle: kubernetes-validate's strict schemas
# (unknown fields are errors) for Kubernetes 1.31, 1.32, 1.33 and 1.34. batch/v1 Jobs are validated as they are;
# each JobSet's spec.replicatedJobs[].template is validated as a batch/v1 Job; any other object must have a core
# schema or it fails. Details in scripts/validate_k8s_manifests.py.
#
#   bash scripts/validate-k8s-manifests.sh                # the golden manifests
#   bash scripts/validate-k8s-manifests.sh --dir DIR      # every *.json in DIR instead
#
# Installs kubernetes-validate (pinned in scripts/k8s-validate-requirements.txt) into <repo>/.cache/k8s-validate-venv
# on first use (PYTHON selects the interpreter, default python3); afterwards it runs offline. Prints one summary
# line; on failure prints file, object, version, field and message for each and exits non-zero.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
dir="$repo/crates/falcon-job/tests/data/manifests"
versions=(1.31 1.32 1.33 1.34)

while [ $# -gt 0 ]; do
    case "$1" in
        --dir)
            [ $# -ge 2 ] || { echo "error: --dir needs a folder" >&2; exit 2; }
            dir="$2"
            shift 2
            ;;
        -h | --help)
            sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        *)
            echo "error: unknown argument: $1 (usage: bash scripts/validate-k8s-manifests.sh [--dir DIR])" >&2
            exit 2
            ;;
    esac
done
[ -d "$dir" ] || { echo "error: not a folder: $dir" >&2; exit 2; }

python="$(bash "$here/pinned-venv.sh" "$repo/.cache/k8s-validate-venv" "$here/k8s-validate-requirements.txt" \
    'import kubernetes_validate' k8s-validate)"
exec "$python" "$here/validate_k8s_manifests.py" "$dir" "${versions[@]}"
