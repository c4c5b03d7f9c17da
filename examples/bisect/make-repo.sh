#!/usr/bin/env bash
# Makes a small, deterministic git repository for trying `falcon bisect`: a simulated training workload (bench.py)
# whose history is a run of harmless commits, one merged side branch, and one commit (the culprit) that makes every
# step slower. Same arguments -> same SHAs on any machine (fixed identities and dates, no user git config).
# See examples/bisect/README.md. Prints one JSON object on stdout; progress goes to stderr.
set -euo pipefail

usage() {
    cat <<'EOF'
usage: make-repo.sh DEST [--commits N] [--culprit K] [--slowdown F] [--noise C] [--steps S] [--step-ms M]

Creates a git repository at DEST (branch main; DEST must not exist or be an empty folder) holding a simulated
training workload (bench.py), a Falcon spec (falcon.yaml) and a history in which commit K slows every step.

  --commits N    first-parent commits on main, N >= 3                       (default 24)
  --culprit K    1-based index of the first-parent commit that slows the
                 workload, 3 <= K <= N; 0 = no commit slows it             (default 15)
  --slowdown F   relative slowdown the culprit adds: cost 1.00 -> 1+F, F > 0 (default 0.08)
  --noise C      run-to-run noise, the sigma of a per-run factor ~ N(1, C)   (default 0.03)
  --steps S      steps per run, baked into bench.py                          (default 20)
  --step-ms M    milliseconds per step at cost 1.00, baked into bench.py     (default 50)

One harmless change arrives as a `git merge --no-ff` of a 2-commit side branch placed before the culprit, so the
full history has N + 2 commits. Tags: v-good (commit 1), v-bad (commit N). Output, on stdout:
  {"repo": ABS_DEST, "commits": N, "good": SHA, "bad": SHA, "culprit": SHA|null, "culprit_subject": STR|null,
   "first_parent": [SHA, ...]}
EOF
}

die() {
    echo "make-repo.sh: $*" >&2
    echo "run 'make-repo.sh --help' for usage" >&2
    exit 2
}

is_uint() { [[ "$1" =~ ^[0-9]+$ ]]; }
is_decimal() { [[ "$1" =~ ^[0-9]+(\.[0-9]+)?$|^\.[0-9]+$ ]]; }

commits=24 culprit=15 slowdown=0.08 noise=0.03 steps=20 step_ms=50
dest=""
while [[ $# -gt 0 ]]; do
    opt="$1"
    case "$opt" in
        -h | --help) usage; exit 0 ;;
        --commits=* | --culprit=* | --slowdown=* | --noise=* | --steps=* | --step-ms=*)
            val="${opt#*=}"; opt="${opt%%=*}"; shift ;;
        --commits | --culprit | --slowdown | --noise | --steps | --step-ms)
            [[ $# -ge 2 ]] || die "$opt needs a value"
            val="$2"; shift 2 ;;
        --) shift
            [[ $# -le 1 ]] || die "more than one DEST given"
            if [[ $# -eq 1 ]]; then
                [[ -z "$dest" ]] || die "more than one DEST given"
                dest="$1"; shift
            fi
            continue ;;
        -*) die "unknown option: $opt" ;;
        *)  [[ -z "$dest" ]] || die "more than one DEST given ('$dest' and '$opt')"
            dest="$opt"; shift; continue ;;
    esac
    case "$opt" in
        --commits) is_uint "$val" || die "--commits wants a whole number, got '$val'"; commits=$((10#$val)) ;;
        --culprit) is_uint "$val" || die "--culprit wants a whole number, got '$val'"; culprit=$((10#$val)) ;;
        --steps)   is_uint "$val" || die "--steps wants a whole number, got '$val'"; steps=$((10#$val)) ;;
        --slowdown) is_decimal "$val" || die "--slowdown wants a decimal number, got '$val'"; slowdown="$val" ;;
        --noise)   is_decimal "$val" || die "--noise wants a decimal number, got '$val'"; noise="$val" ;;
        --step-ms) is_decimal "$val" || die "--step-ms wants a decimal number, got '$val'"; step_ms="$val" ;;
    esac
done

[[ -n "$dest" ]] || { usage >&2; exit 2; }
((commits >= 3)) || die "--commits must be at least 3 (got $commits)"
if ((culprit != 0)) && ((culprit < 3 || culprit > commits)); then
    die "--culprit must be 0 or between 3 and --commits ($commits); got $culprit (the side-branch merge comes before it, and commit 1 is the good end)"
fi
((steps >= 1)) || die "--steps must be at least 1"
export LC_ALL=C
awk -v x="$slowdown" 'BEGIN { exit !(x + 0 > 0) }' || die "--slowdown must be greater than 0"
awk -v x="$step_ms" 'BEGIN { exit !(x + 0 > 0) }' || die "--step-ms must be greater than 0"
bad_cost=$(awk -v x="$slowdown" 'BEGIN { printf "%.4f", 1 + x }' | sed -e 's/0*$//' -e 's/\.$/.0/')
case "$bad_cost" in *.?) bad_cost="${bad_cost}0" ;; esac   # 1.1 -> 1.10, 1.08 stays
[[ "$bad_cost" != "1.00" ]] || die "--slowdown $slowdown rounds to no slowdown at 4 decimals"

if [[ -e "$dest" || -L "$dest" ]]; then
    [[ -d "$dest" ]] || die "DEST exists and is not a folder: $dest"
    [[ -z "$(ls -A "$dest")" ]] || die "DEST exists and is not empty: $dest"
fi
mkdir -p "$dest"
dest_abs=$(cd "$dest" && pwd -P)

# ---- a git that depends on nothing of this user's or machine's -------------------------------------------------
while IFS= read -r var; do unset "$var"; done < <(compgen -e | grep -E '^GIT_' | grep -v '^GIT_EXEC_PATH$' || true)
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0
export GIT_AUTHOR_NAME="Falcon Demo" GIT_AUTHOR_EMAIL="demo@falcon.invalid"
export GIT_COMMITTER_NAME="$GIT_AUTHOR_NAME" GIT_COMMITTER_EMAIL="$GIT_AUTHOR_EMAIL"
export TZ=UTC
g() {
    git -C "$dest_abs" -c user.name="$GIT_AUTHOR_NAME" -c user.email="$GIT_AUTHOR_EMAIL" \
        -c commit.gpgsign=false -c core.autocrlf=false -c core.hooksPath=/dev/null \
        -c i18n.commitEncoding=UTF-8 -c merge.log=false "$@"
}

epoch=1767225600   # 2026-01-01T00:00:00Z; each commit one hour after the one before
tick=0
stamp() {
    export GIT_AUTHOR_DATE="$((epoch + tick * 3600)) +0000"
    export GIT_COMMITTER_DATE="$GIT_AUTHOR_DATE"
    tick=$((tick + 1))
}
commit() {   # commit SUBJECT: stage everything and commit it at the next hour
    stamp
    g add -A
    g commit -q --no-verify --allow-empty-message -m "$1"
    echo "  $(g rev-parse --short HEAD) $1" >&2
}

# Replace the first line equal to OLD in FILE by NEW (fails if there is none): portable, no sed -i.
replace_line() {
    local file="$dest_abs/$1" tmp="$dest_abs/$1.tmp"
    OLD="$2" NEW="$3" awk 'BEGIN { old = ENVIRON["OLD"]; new = ENVIRON["NEW"] }
        !done && $0 == old { print new; done = 1; next } { print } END { exit !done }' "$file" >"$tmp" \
        || { rm -f "$tmp"; echo "make-repo.sh: internal error: no line '$2' in $1" >&2; exit 1; }
    mv "$tmp" "$file"
}
append() { printf '%s\n' "$2" >>"$dest_abs/$1"; }

# ---- commit 1: the workload, the spec, a README -------------------------------------------------------------------
g init -q --template= --object-format=sha1 -b main .
write_bench() {
    cat >"$dest_abs/bench.py" <<EOF
"""A simulated training step: sleeps STEP_MS x COST per step and reports what each step took."""
import json
import os
import random
import statistics
import time

STEPS = int(os.environ.get("STEPS", "$steps"))
STEP_MS = float(os.environ.get("STEP_MS", "$step_ms"))
NOISE = float(os.environ.get("NOISE", "$noise"))  # run-to-run noise: sigma of the per-run factor
COST = 1.00  # relative cost of one step
WARMUP = 3  # steps a real trainer would treat as warm-up (all steps are reported here)
CHECKPOINT_EVERY = 1000
VERSION = "0.1.0"


def main():
    rng = random.Random(os.urandom(16))
    run_factor = rng.gauss(1.0, NOISE)  # this run's machine: drawn once
    out_dir = os.environ.get("FALCON_ARTIFACT_DIR")
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        path = os.path.join(out_dir, "metrics.jsonl")
    else:
        path = "metrics.jsonl"
    times = []
    with open(path, "a") as out:
        for i in range(STEPS):
            jitter = rng.gauss(1.0, 0.005)
            t0 = time.perf_counter()
            time.sleep(max(0.0, STEP_MS / 1000 * COST * run_factor * jitter))
            dt = time.perf_counter() - t0
            times.append(dt)
            out.write(json.dumps({"step": i, "step_time_s": dt}) + "\n")
            out.flush()
    print("median step %.1f ms over %d steps" % (statistics.median(times) * 1000, STEPS))


if __name__ == "__main__":
    main()
EOF
}
write_bench
cat >"$dest_abs/falcon.yaml" <<'EOF'
name: bisect-demo
scenario: benchmark
workload:
  framework: python
  command: [python3, -S, bench.py]
resources: {accelerator: cpu}
code: {repo: ".", ref: main}   # the repository this file is in; falcon bisect overrides the ref
EOF
cat >"$dest_abs/README.md" <<'EOF'
# bisect-demo

A simulated training loop for trying `falcon bisect`. `bench.py` sleeps about `STEP_MS` milliseconds per step
and appends `{"step": i, "step_time_s": t}` to `$FALCON_ARTIFACT_DIR/metrics.jsonl`.

Run it by hand: `python3 -S bench.py`. Run it as an experiment: `falcon run falcon.yaml`.
EOF
echo "making $dest_abs" >&2
commit "Add the simulated training benchmark"

# ---- the harmless changes, consumed in order ---------------------------------------------------------------------
harmless_next=0
harmless() {   # make the next harmless change and commit it
    local subject
    case $harmless_next in
        0) subject="Start a changelog"
           append notes.md "# Changes"
           append notes.md ""
           append notes.md "- Simulated training benchmark with a per-run noise factor." ;;
        1) subject="Add a small data helper module"
           cat >"$dest_abs/data.py" <<'EOF'
import random

SHUFFLE_BUFFER = 1024
BATCH_SIZE = 32  # per device


def batches(n, seed=0):
    rng = random.Random(seed)
    for _ in range(n):
        yield [rng.random() for _ in range(BATCH_SIZE)]
EOF
           ;;
        2) subject="Add a docstring to the data loader"
           replace_line data.py "    rng = random.Random(seed)" \
               '    """Yield n synthetic batches of BATCH_SIZE floats; the same seed gives the same batches."""
    rng = random.Random(seed)' ;;
        3) subject="Rename the warm-up counter"
           replace_line bench.py "WARMUP = 3  # steps a real trainer would treat as warm-up (all steps are reported here)" \
               "WARMUP_STEPS = 3  # steps a real trainer would treat as warm-up (all steps are reported here)" ;;
        4) subject="Note the metrics format in the changelog"
           append notes.md "- Metrics: one {\"step\", \"step_time_s\"} object per line in metrics.jsonl." ;;
        5) subject="Clarify the batch-size comment in data.py"
           replace_line data.py "BATCH_SIZE = 32  # per device" "BATCH_SIZE = 32  # examples per batch, per device" ;;
        6) subject="Bump the workload version to 0.2.0"
           replace_line bench.py 'VERSION = "0.1.0"' 'VERSION = "0.2.0"' ;;
        7) subject="Raise the shuffle buffer in the data helper"
           replace_line data.py "SHUFFLE_BUFFER = 1024" "SHUFFLE_BUFFER = 4096" ;;
        8) subject="Checkpoint every 500 steps"
           replace_line bench.py "CHECKPOINT_EVERY = 1000" "CHECKPOINT_EVERY = 500" ;;
        9) subject="Mention falcon bisect in the README"
           append README.md ""
           append README.md "Find the commit that slowed it down: \`falcon bisect falcon.yaml --good v-good --bad v-bad --metric step_time_s\`." ;;
        10) subject="Add a module docstring to data.py"
            { printf '%s\n\n' '"""Synthetic input data for the benchmark (not used in the timed loop)."""'
              cat "$dest_abs/data.py"; } >"$dest_abs/data.py.tmp" && mv "$dest_abs/data.py.tmp" "$dest_abs/data.py" ;;
        11) subject="Log the data helper in the changelog"
            append notes.md "- data.py: synthetic batches for future input-pipeline tests." ;;
        12) subject="Rename CHECKPOINT_EVERY to SAVE_EVERY"
            local old; old=$(grep '^CHECKPOINT_EVERY = ' "$dest_abs/bench.py")
            replace_line bench.py "$old" "SAVE_EVERY = ${old#CHECKPOINT_EVERY = }" ;;
        13) subject="Bump the workload version to 0.3.0"
            replace_line bench.py 'VERSION = "0.2.0"' 'VERSION = "0.3.0"' ;;
        14) subject="Describe the run-to-run noise in the changelog"
            append notes.md "- Each run draws one speed factor, so runs differ by about NOISE (default $noise)." ;;
        15) subject="Ignore local metrics files"
            append .gitignore "metrics.jsonl"
            append .gitignore "__pycache__/" ;;
        16) subject="Add type hints to batches()"
            replace_line data.py "def batches(n, seed=0):" "def batches(n: int, seed: int = 0):" ;;
        17) subject="Point to the Falcon spec in the README"
            append README.md ""
            append README.md "\`falcon.yaml\` runs \`bench.py\` from this repository at whatever commit Falcon checks out." ;;
        18) subject="Rename SHUFFLE_BUFFER to SHUFFLE_BUFFER_SIZE"
            local buf; buf=$(grep '^SHUFFLE_BUFFER = ' "$dest_abs/data.py")
            replace_line data.py "$buf" "SHUFFLE_BUFFER_SIZE = ${buf#SHUFFLE_BUFFER = }" ;;
        19) subject="Export batches from data.py"
            append data.py ""
            append data.py ""
            append data.py '__all__ = ["batches"]' ;;
        20) subject="Bump the workload version to 0.4.0"
            replace_line bench.py 'VERSION = "0.3.0"' 'VERSION = "0.4.0"' ;;
        21) subject="Reword the warm-up comment"
            local warm; warm=$(grep '^WARMUP_STEPS = ' "$dest_abs/bench.py")
            replace_line bench.py "$warm" "WARMUP_STEPS = 3  # a real trainer would skip these; every step is reported here" ;;
        22) subject="Summarise the 0.4.0 changes in the changelog"
            append notes.md "- 0.4.0: type hints and exports in data.py, docs for the Falcon spec." ;;
        *)  subject="Update the changelog (entry $((harmless_next - 22)))"
            append notes.md "- Housekeeping entry $((harmless_next - 22)); no change to the workload." ;;
    esac
    harmless_next=$((harmless_next + 1))
    commit "$subject"
}

side_branch() {   # two commits on a short branch, merged with --no-ff: one first-parent commit on main
    g checkout -q -b docs-env-knobs
    append README.md ""
    append README.md "Environment: \`STEPS\` (default $steps), \`STEP_MS\` (default $step_ms), \`NOISE\` (default $noise)."
    commit "Document the environment knobs in the README"
    replace_line bench.py '"""A simulated training step: sleeps STEP_MS x COST per step and reports what each step took."""' \
        '"""A simulated training step: sleeps STEP_MS x COST per step and reports what each step took.

Each run draws one speed factor from gauss(1, NOISE) and each step a jitter from gauss(1, 0.005); the measured
step times go to $FALCON_ARTIFACT_DIR/metrics.jsonl (./metrics.jsonl without it), one JSON object per line.
"""'
    commit "Describe the metrics file in the bench.py docstring"
    g checkout -q main
    stamp
    g merge -q --no-ff --no-verify --no-edit -m "Merge branch 'docs-env-knobs'" docs-env-knobs
    g branch -q -d docs-env-knobs
    echo "  $(g rev-parse --short HEAD) Merge branch 'docs-env-knobs'" >&2
}

culprit_subject="Validate every batch twice"
if ((culprit > 0)); then merge_at=$((culprit / 2)); else merge_at=$((commits / 2)); fi
((merge_at >= 2)) || merge_at=2
for ((k = 2; k <= commits; k++)); do
    if ((k == merge_at)); then
        side_branch
    elif ((k == culprit)); then
        replace_line bench.py "COST = 1.00  # relative cost of one step" "COST = $bad_cost  # relative cost of one step"
        commit "$culprit_subject"
    else
        harmless
    fi
done

g tag v-good "$(g rev-list --first-parent --reverse HEAD | head -n 1)"
g tag v-bad HEAD

# ---- the JSON summary -------------------------------------------------------------------------------------------
json_str() {   # a JSON string literal (escapes \, ", and control characters)
    local s="$1" out="" c i
    for ((i = 0; i < ${#s}; i++)); do
        c="${s:i:1}"
        case "$c" in
            '\') out+='\\' ;;
            '"') out+='\"' ;;
            $'\n') out+='\n' ;;
            $'\t') out+='\t' ;;
            $'\r') out+='\r' ;;
            *) if [[ "$c" < ' ' ]]; then out+=$(printf '\\u%04x' "'$c"); else out+="$c"; fi ;;
        esac
    done
    printf '"%s"' "$out"
}
mapfile -t fp < <(g rev-list --first-parent --reverse HEAD)
((${#fp[@]} == commits)) || { echo "make-repo.sh: internal error: ${#fp[@]} first-parent commits, wanted $commits" >&2; exit 1; }
fp_json=""
for sha in "${fp[@]}"; do fp_json+="${fp_json:+, }\"$sha\""; done
if ((culprit > 0)); then
    culprit_json="\"${fp[culprit - 1]}\""
    subject_json=$(json_str "$(g log -1 --format=%s "${fp[culprit - 1]}")")
else
    culprit_json=null subject_json=null
fi
printf '{"repo": %s, "commits": %d, "good": "%s", "bad": "%s", "culprit": %s, "culprit_subject": %s, "first_parent": [%s]}\n' \
    "$(json_str "$dest_abs")" "$commits" "${fp[0]}" "${fp[commits - 1]}" "$culprit_json" "$subject_json" "$fp_json"
