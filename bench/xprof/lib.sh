# Sourced by the bench scripts here: one timed run and the median of several. The caller declares
# `declare -A secs rss` (per label: wall milliseconds and peak RSS KiB, space-separated).

# measure LABEL CMD...: runs CMD once (stdout dropped) under /usr/bin/time; appends its wall time and peak RSS.
measure() {
    local label="$1" start end peak
    shift
    start=$(date +%s%N)
    peak=$( { /usr/bin/time -f %M "$@" >/dev/null; } 2>&1 | tail -1)
    end=$(date +%s%N)
    secs[$label]+="$(( (end - start) / 1000000 )) "
    rss[$label]+="$peak "
}

# The median of the numbers on stdin (space- or newline-separated).
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
