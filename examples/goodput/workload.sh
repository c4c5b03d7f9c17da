#!/bin/sh
# A workload with a known goodput (issue 37's ground truth), in POSIX sh: it sleeps START_S before its first step
# (start-up), its first step takes COMPILE_S ("compilation"), the others STEP_S, every 10th step INPUT_S more (an
# input stall), a checkpoint every 20 steps takes CHECKPOINT_S (logged as an `event` line); on its first attempt it
# exits KILL_CODE after step KILL_AT (a transient failure the spec lists in `retry_on_exit_codes`), and the retry
# resumes after its last checkpoint. It writes Falcon's metrics lines (`step`, `time`, `step_time_s`) to
# $FALCON_ARTIFACT_DIR/metrics.jsonl, appending across attempts.
set -eu
: "${START_S:=5}" "${COMPILE_S:=3}" "${STEP_S:=0.1}" "${INPUT_S:=0.04}" "${CHECKPOINT_S:=1}"
: "${STEPS:=50}" "${KILL_AT:=30}" "${KILL_CODE:=75}"
dir="${FALCON_ARTIFACT_DIR:?FALCON_ARTIFACT_DIR is not set}"
# The checkpoint outlives the attempt (each attempt gets its own artifact folder): beside the experiment's config.
state="${GOODPUT_STATE_DIR:-$(dirname "${FALCON_EXP_CONFIG:?FALCON_EXP_CONFIG is not set}")/goodput-state}"
mkdir -p "$dir" "$state"
metrics="$dir/metrics.jsonl"
now() { date +%s.%N; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f", a - b }'; }

step=1
[ -f "$state/checkpoint" ] && step=$(( $(cat "$state/checkpoint") + 1 ))
sleep "$START_S"
first=1
while [ "$step" -le "$STEPS" ]; do
    # The step's duration is worked out before its clock starts: one `sleep` a step, so every step pays the same
    # process start-up and a stalled step is slower by the stall alone.
    if [ "$first" = 1 ]; then dur="$COMPILE_S"; first=0; else dur="$STEP_S"; fi
    [ $((step % 10)) = 0 ] && dur=$(awk -v a="$dur" -v b="$INPUT_S" 'BEGIN { printf "%.6f", a + b }')
    t0=$(now)
    sleep "$dur"
    t1=$(now)
    echo "{\"step\": $step, \"time\": $t1, \"step_time_s\": $(sub "$t1" "$t0")}" >>"$metrics"
    if [ $((step % 20)) = 0 ]; then
        sleep "$CHECKPOINT_S"
        echo "$step" >"$state/checkpoint"
        t2=$(now)
        echo "{\"step\": $step, \"time\": $t2, \"event\": \"checkpoint\", \"event_s\": $(sub "$t2" "$t1")}" >>"$metrics"
    fi
    if [ "$step" = "$KILL_AT" ] && [ ! -f "$state/killed" ]; then
        touch "$state/killed"
        echo "goodput workload: exiting $KILL_CODE after step $step (a transient failure)" >&2
        exit "$KILL_CODE"
    fi
    step=$((step + 1))
done
