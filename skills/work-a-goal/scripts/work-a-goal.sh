#!/usr/bin/env bash
# Works one optimisation goal end to end, through `falcon … --json` only:
#   claim (the goal given, or the next open one) → a sweep around the goal's baseline (`base: e-N`) → run it and
#   wait → goal compare → profile compare, best against baseline → goal report (JSON and Markdown) → achieve
#   the goal when its best meets the target, else release it.
#
#   work-a-goal.sh --owner NAME --sweep KEY=V1,V2[,…] [--goal g-N] [--repeats N] [--timeout 30m] [--out DIR]
#
# KEY is a dotted spec path (config.batch_size, config.remat, workload.env.XLA_FLAGS). Everything falcon printed
# is kept in DIR (default ./work-a-goal): goal.json, sweep.yaml, session.json, compare.json,
# profile_compare.json (when both have profiles), report.json, report.md, closed.json. Exit status: 0 when the
# goal was worked (achieved or released), falcon's own exit status when a step fails (the goal is released).
set -euo pipefail

usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
OWNER="" SWEEP="" GOAL="" REPEATS=1 TIMEOUT=30m OUT=work-a-goal
while (($#)); do
    case "$1" in
        --owner) OWNER="$2"; shift 2 ;;
        --sweep) SWEEP="$2"; shift 2 ;;
        --goal) GOAL="$2"; shift 2 ;;
        --repeats) REPEATS="$2"; shift 2 ;;
        --timeout) TIMEOUT="$2"; shift 2 ;;
        --out) OUT="$2"; shift 2 ;;
        -h|--help) usage ;;
        *) echo "work-a-goal: unknown argument $1" >&2; usage ;;
    esac
done
[[ -n "$OWNER" && "$SWEEP" == *=* ]] || usage
KEY="${SWEEP%%=*}" VALUES="${SWEEP#*=}"
mkdir -p "$OUT"
say() { printf 'work-a-goal: %s\n' "$*" >&2; }

# A field of a JSON file falcon wrote (dotted path, list indexes as numbers); empty when null.
field() {
    python3 - "$1" "$2" <<'PY'
import json, sys
value = json.load(open(sys.argv[1]))
for part in sys.argv[2].split("."):
    value = value[int(part)] if isinstance(value, list) else (value or {}).get(part)
print("" if value is None else value)
PY
}

# 1. Claim.
if [[ -n "$GOAL" ]]; then
    falcon goal claim "$GOAL" --owner "$OWNER" --json >"$OUT/goal.json"
else
    falcon goal claim --next --owner "$OWNER" --json >"$OUT/goal.json"
fi
GOAL="$(field "$OUT/goal.json" id)"
BASELINE="$(field "$OUT/goal.json" baseline)"
say "claimed $GOAL ($(field "$OUT/goal.json" title)) as $OWNER"
release() { # REASON: give the goal back, keeping what falcon said
    falcon goal release "$GOAL" --owner "$OWNER" --reason "$1" --json >"$OUT/closed.json" || true
}
trap 'status=$?; if ((status != 0)); then release "work-a-goal stopped (exit $status)"; fi' EXIT
if [[ -z "$BASELINE" ]]; then
    say "$GOAL has no baseline experiment: set one (falcon goal set-baseline $GOAL e-N) and run again"
    exit 4
fi

# 2. A sweep around the baseline: its stored spec, with KEY over VALUES; each point takes it as its baseline.
{
    echo "base: $BASELINE"
    echo "sweep:"
    echo "  $KEY: [$VALUES]"
    echo "repeats: $REPEATS"
    echo "name_template: \"$GOAL-${KEY##*.}-\${$KEY}\""
} >"$OUT/sweep.yaml"
say "sweeping $KEY over [$VALUES] from $BASELINE"
falcon session submit "$OUT/sweep.yaml" --goal "$GOAL" --wait --timeout "$TIMEOUT" --json >"$OUT/session.json"

# 3. Rank, and say why the best differs from the baseline.
falcon goal compare "$GOAL" --json >"$OUT/compare.json"
BEST="$(field "$OUT/compare.json" best.experiment)"
say "best: ${BEST:-none} ($(field "$OUT/compare.json" best.verdict.verdict) against $BASELINE)"
if [[ -n "$BEST" && "$BEST" != "$BASELINE" ]]; then
    falcon profile compare "$BASELINE" "$BEST" --json >"$OUT/profile_compare.json" || test $? -eq 3
fi

# 4. Report, then achieve or release.
falcon goal report "$GOAL" --json >"$OUT/report.json"
falcon goal report "$GOAL" --format md -o "$OUT/report.md" --force
if [[ "$(field "$OUT/report.json" progress.meets_target)" == "True" ]]; then
    falcon goal achieve "$GOAL" --owner "$OWNER" --reason "best $BEST meets the target" --json >"$OUT/closed.json"
    say "$GOAL achieved by $BEST"
else
    release "best so far: ${BEST:-none}; the target is not met"
    say "$GOAL released: the target is not met"
fi
trap - EXIT
