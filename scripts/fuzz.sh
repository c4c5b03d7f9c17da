#!/usr/bin/env bash
# Fuzzes falcon-xplane's decoder for a bounded time; fails (exit 1) on a crash.
#
#   bash scripts/fuzz.sh [SECONDS]        # default 60
#
# - Installs cargo-fuzz into the clone (.cache/cargo-bin, via `cargo install --root`) unless it is there.
# - Builds with the toolchain that is installed: libFuzzer's sanitizer flags (-Z...) are unstable, so on a
#   stable toolchain the build runs with RUSTC_BOOTSTRAP=1 (fuzz builds only; nothing else is built so).
#   No second toolchain is installed; FALCON_FUZZ_TOOLCHAIN=nightly picks an installed nightly instead.
# - Target `decode` (crates/falcon-xplane/fuzz/fuzz_targets/decode.rs): decode never panics, errors
#   carry an offset inside the input, one thread and several give the same result.
# - Corpus: the committed seeds (crates/falcon-xplane/fuzz/seeds/decode, small XSpaces cut out of the
#   test captures by fuzz/make_seeds.py) plus a working corpus in .cache/fuzz-corpus/decode that
#   persists between runs in the same clone (never committed).
# - A crash leaves its input in .cache/fuzz-artifacts/decode/; reproduce it with
#     RUSTC_BOOTSTRAP=1 .cache/cargo-bin/bin/cargo-fuzz run --fuzz-dir crates/falcon-xplane/fuzz decode <that file>
#   and add it as a regression test in crates/falcon-xplane/tests/fuzz_regressions.rs.
set -euo pipefail

seconds="${1:-60}"
[[ "$seconds" =~ ^[0-9]+$ && "$seconds" -gt 0 ]] || { echo "usage: $0 [SECONDS]" >&2; exit 2; }

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

CARGO_FUZZ_VERSION=0.13.2
bin="$ROOT/.cache/cargo-bin/bin"
fuzz_dir="crates/falcon-xplane/fuzz"
corpus="$ROOT/.cache/fuzz-corpus/decode"
artifacts="$ROOT/.cache/fuzz-artifacts/decode"

log() { printf 'fuzz: %s\n' "$*" >&2; }

cargo_cmd=(cargo) rustc_cmd=(rustc)
if [[ -n "${FALCON_FUZZ_TOOLCHAIN:-}" ]]; then
    cargo_cmd=(cargo "+$FALCON_FUZZ_TOOLCHAIN") rustc_cmd=(rustc "+$FALCON_FUZZ_TOOLCHAIN")
    "${cargo_cmd[@]}" --version >/dev/null 2>&1 \
        || { log "ERROR: FALCON_FUZZ_TOOLCHAIN=$FALCON_FUZZ_TOOLCHAIN is not an installed toolchain"; exit 1; }
fi
rustc_version="$("${rustc_cmd[@]}" --version)"
if [[ "$rustc_version" != *nightly* ]]; then
    export RUSTC_BOOTSTRAP=1
    log "toolchain: $rustc_version (not nightly: building the fuzz target with RUSTC_BOOTSTRAP=1)"
else
    log "toolchain: $rustc_version"
fi

if ! "$bin/cargo-fuzz" --version 2>/dev/null | grep -q " $CARGO_FUZZ_VERSION\$"; then
    log "installing cargo-fuzz $CARGO_FUZZ_VERSION into .cache/cargo-bin"
    cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked --root "$ROOT/.cache/cargo-bin"
fi
export PATH="$bin:$PATH"

mkdir -p "$corpus" "$artifacts"
log "building the fuzz target"
"${cargo_cmd[@]}" fuzz build --fuzz-dir "$fuzz_dir" decode

log "running target decode for ${seconds}s"
start=$(date +%s)
set +e
"${cargo_cmd[@]}" fuzz run --fuzz-dir "$fuzz_dir" decode "$corpus" "$fuzz_dir/seeds/decode" -- \
    -max_total_time="$seconds" -max_len=16384 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$artifacts/"
rc=$?
set -e
log "fuzzed for $(( $(date +%s) - start ))s, exit status $rc; corpus $(find "$corpus" -type f | wc -l) inputs"
if [[ $rc -ne 0 ]]; then
    log "FAILED: crash input(s) in $artifacts:"
    ls -l "$artifacts" >&2
    exit 1
fi
