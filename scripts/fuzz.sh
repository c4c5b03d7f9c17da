#!/usr/bin/env bash
# Fuzzes falcon-xplane's decoder for a bounded time; fails (exit 1) on a crash.
#
#   bash scripts/fuzz.sh [SECONDS]        # default 60
#
# - Installs cargo-fuzz into the clone (.cache/cargo-bin, via `cargo install --root`) unless it is there.
# - Needs the nightly toolchain (libFuzzer's sanitizer flags); installs it with rustup when it is missing.
# - Target `decode` (crates/falcon-xplane/fuzz/fuzz_targets/decode.rs): decode never panics, errors
#   carry an offset inside the input, one thread and several give the same result.
# - Corpus: the committed seeds (crates/falcon-xplane/fuzz/seeds/decode, small XSpaces cut out of the
#   test captures by fuzz/make_seeds.py) plus a working corpus in .cache/fuzz-corpus/decode that
#   persists between runs in the same clone (never committed).
# - A crash leaves its input in .cache/fuzz-artifacts/decode/; reproduce it with
#     cargo +nightly fuzz run --fuzz-dir crates/falcon-xplane/fuzz decode <that file>
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

if ! cargo +nightly --version >/dev/null 2>&1; then
    command -v rustup >/dev/null 2>&1 || { log "ERROR: no nightly toolchain and no rustup to install it"; exit 1; }
    log "installing the nightly toolchain"
    rustup toolchain install nightly --profile minimal
fi

if ! "$bin/cargo-fuzz" --version 2>/dev/null | grep -q " $CARGO_FUZZ_VERSION\$"; then
    log "installing cargo-fuzz $CARGO_FUZZ_VERSION into .cache/cargo-bin"
    cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked --root "$ROOT/.cache/cargo-bin"
fi
export PATH="$bin:$PATH"

mkdir -p "$corpus" "$artifacts"
log "building the fuzz target"
cargo +nightly fuzz build --fuzz-dir "$fuzz_dir" decode

log "running target decode for ${seconds}s"
start=$(date +%s)
set +e
cargo +nightly fuzz run --fuzz-dir "$fuzz_dir" decode "$corpus" "$fuzz_dir/seeds/decode" -- \
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
