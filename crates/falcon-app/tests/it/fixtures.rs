//! Inputs written by tests of the use cases in process and by the binary's tests alike (falcon-cli's `common`
//! includes this file): a sweepable shell workload's spec, a `falcon.toml` on the Slurm test cluster, files that are
//! not captures.

use std::path::Path;

/// Writes `base.yaml` in `dir`: a shell workload logging 20 steps whose `step_time_s` is `0.<config.base_ms>`
/// (default 100, i.e. 0.100 s), for sweeps over `config.base_ms`.
pub fn write_base_ms_spec(dir: &Path) {
    std::fs::write(
        dir.join("base.yaml"),
        "name: base\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [sh, -c, 'for i in $(seq 0 19); do \
         echo \"{\\\"step\\\": $i, \\\"step_time_s\\\": 0.${config.base_ms}\"} >> $FALCON_ARTIFACT_DIR/metrics.jsonl; done']\n\
         config: {base_ms: 100}\nresources: {accelerator: cpu}\n",
    )
    .unwrap();
}

/// `falcon.toml` text with one pool `slurm` on the REAL single-node Slurm cluster of `scripts/services.sh up`
/// (`FALCON_TEST_SLURM_CONF`, `FALCON_TEST_SLURM_PARTITION`); without them the calling test fails saying so.
/// Its `data_dir` is written out (beside the file): a default one is the working directory's — the user's folder
/// for the CLI, the crate's for a test in process.
pub fn slurm_pool_config() -> String {
    let var = |key: &str| {
        std::env::var(key).ok().filter(|v| !v.trim().is_empty()).unwrap_or_else(|| {
            panic!(
                "{key} is not set: this test needs the single-node Slurm cluster of scripts/services.sh. Run it with \
                 scripts/test.sh (or `scripts/services.sh up && source .cache/services.env` first)."
            )
        })
    };
    let (conf, partition) = (var("FALCON_TEST_SLURM_CONF"), var("FALCON_TEST_SLURM_PARTITION"));
    format!(
        "data_dir = \".falcon\"\n\n[[pools]]\nname = \"slurm\"\nbackend = \"slurm\"\nzone = \"local\"\nplatform = \
         \"cpu\"\naccelerators = [\"cpu\"]\ncapacity = 2\n\n[pools.settings]\nslurm_conf = \"{conf}\"\npartition = \
         \"{partition}\"\n"
    )
}

/// Files named `.xplane.pb` that are not captures, with what each is: empty, a real capture cut to a third, random
/// bytes, and a tool's JSON output (the TPU v6e capture's XProf HLO stats) under a capture's name.
pub fn bad_xplanes() -> Vec<(&'static str, Vec<u8>)> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let good = std::fs::read(crates.join("falcon-xplane/tests/data/tpu_v6e_inference.xplane.pb")).unwrap();
    vec![
        ("empty.xplane.pb", Vec::new()),
        ("truncated.xplane.pb", good[..good.len() / 3].to_vec()),
        ("random.xplane.pb", (0..4096u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect()),
        (
            "tool_output.xplane.pb",
            std::fs::read(crates.join("falcon-analysis/tests/data/tpu_v6e_inference_xprof_hlo_stats.json")).unwrap(),
        ),
    ]
}
