//! `falcon accuracy compare A B`. (Being written.)

use crate::cli::{AccuracyCompareArgs, GlobalArgs};
use std::process::ExitCode;

pub async fn run(global: &GlobalArgs, args: &AccuracyCompareArgs) -> anyhow::Result<ExitCode> {
    let _ = (global, args);
    anyhow::bail!("accuracy compare is not built yet")
}
