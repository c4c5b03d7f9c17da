# Sourced by the benchmarks that run the example JAX workload through Falcon (bench/aa, bench/leak), from the
# repository root: sets FALCON (a release build unless already set), installs the example's venv, makes a
# scratch project in WORK (its own falcon.toml, SQLite and artifacts; removed on exit) and defines `f`, falcon
# on that project.
if [[ -z "${FALCON:-}" ]]; then
    cargo build --quiet --release --locked -p falcon-cli
    FALCON="$PWD/target/release/falcon"
fi
bash examples/jax_transformer/setup.sh >&2
WORK="$(mktemp -d)"
chmod 755 "$WORK"   # as root, jobs run as users of their own, which must enter it (docs/guide/jobs.md, "Workload isolation")
trap 'rm -rf "$WORK"' EXIT
f() { "$FALCON" --config "$WORK/falcon.toml" "$@"; }
f init >&2
