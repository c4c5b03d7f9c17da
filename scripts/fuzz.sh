#!/usr/bin/env bash
# Fuzzes every parser of untrusted input (fuzz/fuzz_targets/, one libFuzzer target each); fails (exit 1) on a
# crash. Each target asserts no panic, bounded memory (-malloc_limit_mb, -rss_limit_mb), and errors that name
# their input with every position inside it (fuzz/src/lib.rs).
#
#   bash scripts/fuzz.sh [SECONDS]        # each target for SECONDS (default 15; .ci/run passes 10)
#   bash scripts/fuzz.sh --long           # each target for its LONG_RUNS executions (500,000 for the slowest, more
#                                         # for the fast ones; 10.6 million in all): docs/RELIABILITY.md
#   bash scripts/fuzz.sh --only NAME ...  # one target (with either of the above); repeat for more
#   bash scripts/fuzz.sh --summary FILE   # the summary table there (default target/fuzz-summary.md)
#   bash scripts/fuzz.sh --jobs N         # N targets at a time (default: the machine's cores, at most 4)
#
# - Installs cargo-fuzz into the clone (.cache/cargo-bin, via `cargo install --root`) unless it is there.
# - Builds every target once, with the toolchain that is installed: libFuzzer's sanitizer flags (-Z...) are
#   unstable, so on a stable toolchain the build runs with RUSTC_BOOTSTRAP=1 (fuzz builds only; nothing else is
#   built so). FALCON_FUZZ_TOOLCHAIN=nightly picks an installed nightly instead.
# - Corpus per target: seeds from the project's real test data (fixtures, examples, fuzz/seeds/; assembled in
#   .cache/fuzz-seeds/NAME) plus a working corpus in .cache/fuzz-corpus/NAME kept between runs in the same clone.
# - A crash leaves its input in .cache/fuzz-artifacts/NAME/; reproduce it with
#     RUSTC_BOOTSTRAP=1 .cache/cargo-bin/bin/cargo-fuzz run --fuzz-dir fuzz NAME <that file>
#   and add it as a regression test beside the parser's tests.
# - The summary (executions, coverage, corpus, crashes per target) is printed and written to
#   target/fuzz-summary.md.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

seconds=15 long=0 only=() summary="" jobs=""
while (($#)); do
    case "$1" in
        --long) long=1; shift ;;
        --only) [[ -n "${2:-}" ]] || { echo "--only needs a target name" >&2; exit 2; }; only+=("$2"); shift 2 ;;
        --summary) summary="$2"; shift 2 ;;
        --jobs) [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || { echo "--jobs needs a positive number" >&2; exit 2; }
                jobs="$2"; shift 2 ;;
        -h|--help) sed -n '2,23p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) [[ "$1" =~ ^[0-9]+$ && "$1" -gt 0 ]] || { echo "usage: $0 [SECONDS | --long] [--only NAME]... [--jobs N] [--summary FILE]" >&2; exit 2; }
           seconds="$1"; shift ;;
    esac
done
if [[ -z "$jobs" ]]; then jobs="$(nproc 2>/dev/null || echo 1)"; ((jobs <= 4)) || jobs=4; fi
# --long: executions per target, at least 500,000 each, more where a target runs fast (10.6 million in all).
declare -A LONG_RUNS=(
    [decode]=800000 [xspace_file]=800000 [chrome_trace]=500000 [megatron]=500000 [kernel_bench]=500000
    [generic_metrics]=500000 [spec]=500000 [npy]=500000 [npz]=500000 [safetensors]=500000
    [tfevents]=2500000 [maxtext]=1000000 [sweep]=1000000 [hlo_proto]=500000 [shard_partial]=500000
    [hlo_collective_text]=2500000
)

log() { printf 'fuzz: %s\n' "$*" >&2; }

# target -> its seeds (files or folders of the repository's real data)
declare -A SEEDS=(
    [decode]="fuzz/seeds/decode"
    [xspace_file]="fuzz/seeds/decode"
    [hlo_proto]="fuzz/seeds/hlo_proto"
    [shard_partial]="fuzz/seeds/shard_partial"
    [hlo_collective_text]="fuzz/seeds/hlo_collective_text"
    [chrome_trace]="fuzz/seeds/chrome_trace crates/falcon-analysis/tests/data/jax_cpu_mlp_vm.trace.json.gz"
    [tfevents]="crates/falcon-analysis/tests/data/tfevents/run"
    [npy]="crates/falcon-analysis/tests/data/tensors/*.npy"
    [npz]="crates/falcon-analysis/tests/data/tensors/*.npz"
    [safetensors]="crates/falcon-analysis/tests/data/tensors/*.safetensors"
    [maxtext]="crates/falcon-analysis/tests/data/accuracy/maxtext_metrics.jsonl crates/falcon-analysis/tests/data/accuracy/console_v5p8.log"
    [megatron]="fuzz/seeds/megatron crates/falcon-analysis/tests/data/accuracy/log_lines.txt crates/falcon-analysis/tests/data/accuracy/bert_*.json"
    [generic_metrics]="fuzz/seeds/generic_metrics crates/falcon-analysis/tests/data/accuracy/maxtext_metrics.jsonl crates/falcon-analysis/tests/data/kernel_bench"
    [kernel_bench]="crates/falcon-analysis/tests/data/kernel_bench"
    [spec]="examples/jax_transformer/baseline.yaml examples/jax_transformer/variant.yaml examples/jax_transformer/leak.yaml examples/kernel_bench/spec.yaml"
    [sweep]="examples/jax_transformer/sweep.yaml examples/jax_transformer/leak_sweep.yaml examples/jax_transformer/repeats.yaml"
)
# Longest input per target: 64 KiB, but 8 KiB for generic_metrics, whose line-based readers gain no coverage from
# longer inputs and ran at about 100 executions/s on 64 KiB ones.
declare -A MAX_LEN=([generic_metrics]=8192)
TARGETS=(decode xspace_file chrome_trace tfevents npy npz safetensors maxtext megatron generic_metrics kernel_bench spec sweep hlo_proto shard_partial hlo_collective_text)
((${#only[@]})) && TARGETS=("${only[@]}")
for t in "${TARGETS[@]}"; do [[ -n "${SEEDS[$t]:-}" ]] || { log "no target $t (targets: ${!SEEDS[*]})"; exit 2; }; done

cargo_cmd=(cargo) rustc_cmd=(rustc)
if [[ -n "${FALCON_FUZZ_TOOLCHAIN:-}" ]]; then
    cargo_cmd=(cargo "+$FALCON_FUZZ_TOOLCHAIN") rustc_cmd=(rustc "+$FALCON_FUZZ_TOOLCHAIN")
    "${cargo_cmd[@]}" --version >/dev/null 2>&1 \
        || { log "ERROR: FALCON_FUZZ_TOOLCHAIN=$FALCON_FUZZ_TOOLCHAIN is not an installed toolchain"; exit 1; }
fi
rustc_version="$("${rustc_cmd[@]}" --version)"
if [[ "$rustc_version" != *nightly* ]]; then
    export RUSTC_BOOTSTRAP=1
    log "toolchain: $rustc_version (not nightly: building the fuzz targets with RUSTC_BOOTSTRAP=1)"
else
    log "toolchain: $rustc_version"
fi

CARGO_FUZZ_VERSION=0.13.2
bin="$ROOT/.cache/cargo-bin/bin"
if ! "$bin/cargo-fuzz" --version 2>/dev/null | grep -q " $CARGO_FUZZ_VERSION\$"; then
    log "installing cargo-fuzz $CARGO_FUZZ_VERSION into .cache/cargo-bin"
    cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked --root "$ROOT/.cache/cargo-bin"
fi
export PATH="$bin:$PATH"

log "building ${#TARGETS[@]} fuzz target(s) once"
build_start=$SECONDS
"${cargo_cmd[@]}" fuzz build --fuzz-dir fuzz
log "built in $((SECONDS - build_start)) s"

mkdir -p target
[[ -n "$summary" ]] || summary="$ROOT/target/fuzz-summary.md"
{
    echo "| target | seconds | executions | executions/s | coverage (edges) | features | corpus | crashes |"
    echo "|---|---|---|---|---|---|---|---|"
} >"$summary"
rows="$ROOT/target/fuzz-rows"
rm -rf "$rows" && mkdir -p "$rows"
# One target: fuzzes it, leaves its summary row in $rows/NAME.row and its exit status in $rows/NAME.rc.
fuzz_one() {
    local t="$1" corpus="$ROOT/.cache/fuzz-corpus/$1" artifacts="$ROOT/.cache/fuzz-artifacts/$1"
    local seeds="$ROOT/.cache/fuzz-seeds/$1" limit what out start rc took runs last cov ft crashes
    rm -rf "$seeds" && mkdir -p "$corpus" "$artifacts" "$seeds"
    # shellcheck disable=SC2086 # the seed lists are globs
    for s in ${SEEDS[$t]}; do
        if [[ -d "$s" ]]; then cp "$s"/* "$seeds"/ 2>/dev/null || true; else cp "$s" "$seeds"/; fi
    done
    # --long stops at the count, or after 4 hours as a guard (generic_metrics needs about 35 minutes alone on
    # one core, and more than 1 hour beside other work).
    if ((long)); then limit=(-runs="${LONG_RUNS[$t]}" -max_total_time=14400); what="${LONG_RUNS[$t]} executions"
    else limit=(-max_total_time="$seconds"); what="${seconds}s"; fi
    log "target $t: $what, $(find "$seeds" -type f | wc -l) seed(s)"
    out="$ROOT/target/fuzz-$t.log" start=$SECONDS
    rc=0
    "${cargo_cmd[@]}" fuzz run --fuzz-dir fuzz "$t" "$corpus" "$seeds" -- "${limit[@]}" -max_len="${MAX_LEN[$t]:-65536}" -timeout=10 \
        -rss_limit_mb=2048 -malloc_limit_mb=1024 -print_final_stats=1 -artifact_prefix="$artifacts/" >"$out" 2>&1 || rc=$?
    took=$((SECONDS - start))
    runs="$(grep -o 'stat::number_of_executed_units: [0-9]*' "$out" | tail -1 | grep -o '[0-9]*$' || echo 0)"
    last="$(grep -E '^#[0-9]+' "$out" | tail -1 || true)"
    cov="$(grep -o 'cov: [0-9]*' <<<"$last" | grep -o '[0-9]*' || echo '?')"
    ft="$(grep -o 'ft: [0-9]*' <<<"$last" | grep -o '[0-9]*' || echo '?')"
    crashes=$(find "$artifacts" -type f | wc -l)
    echo "| $t | $took | ${runs:-0} | $(( ${runs:-0} / (took > 0 ? took : 1) )) | $cov | $ft | $(find "$corpus" -type f | wc -l) | $crashes |" >"$rows/$t.row"
    echo "$rc ${runs:-0}" >"$rows/$t.rc"
    if [[ $rc -ne 0 ]]; then
        log "target $t FAILED (exit $rc); the end of its log ($out):"
        tail -40 "$out" >&2
    else
        log "target $t: ${runs:-0} executions in ${took}s, coverage $cov edges"
    fi
}
log "fuzzing ${#TARGETS[@]} target(s), $jobs at a time"
for t in "${TARGETS[@]}"; do
    while (($(jobs -rp | wc -l) >= jobs)); do wait -n || true; done
    fuzz_one "$t" &
done
wait
failed=() total_runs=0
for t in "${TARGETS[@]}"; do
    if [[ -f "$rows/$t.rc" ]]; then
        read -r rc runs <"$rows/$t.rc"
        cat "$rows/$t.row" >>"$summary"
    else
        rc="no result" runs=0
        echo "| $t | ? | 0 | 0 | ? | ? | ? | ? |" >>"$summary"
    fi
    total_runs=$((total_runs + runs))
    [[ "$rc" == 0 ]] || failed+=("$t")
done
echo "" >>"$summary"
echo "Executions in all: $total_runs" >>"$summary"
cat "$summary" >&2
if ((${#failed[@]})); then
    log "FAILED: ${failed[*]} (inputs in .cache/fuzz-artifacts/)"
    exit 1
fi
