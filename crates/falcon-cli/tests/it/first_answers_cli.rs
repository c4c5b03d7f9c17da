//! The first answers on the quickstart's XLA:CPU capture (the example JAX workload at batch 16) at the process
//! boundary: clap refuses a negative `--peak-tflops` with exit 2. The use case's outcomes (one bound-by vocabulary,
//! `null` for the unknown, every tool's rows or one line saying why, the summary rows, the op profile and MFU) are
//! tested in process in falcon-app/tests/it/first_answers.rs.

use crate::common::falcon;
use std::path::{Path, PathBuf};

fn batch16() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../falcon-analysis/tests/data/compare/batch16/plugins/profile/run1/vm.xplane.pb")
}

/// The process boundary of `--peak-tflops`: clap refuses a negative peak with exit 2. Where the op time goes and
/// MFU from the workload's FLOPs and a peak are tested in process in falcon-app/tests/it/first_answers.rs.
#[test]
fn the_op_profile_says_where_the_time_goes_and_mfu_needs_flops_and_a_peak() {
    let dir = tempfile::tempdir().unwrap();
    let file = batch16();
    let bad = falcon(dir.path(), &["profile", "analyze", file.to_str().unwrap(), "--peak-tflops", "-1", "--json"]);
    assert_eq!(bad.status.code(), Some(2), "{}", String::from_utf8_lossy(&bad.stderr));
}
