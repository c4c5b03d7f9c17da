//! `falcon accuracy tensors A B`. (Being written.)

use crate::cli::{AccuracyTensorsArgs, GlobalArgs};
use std::process::ExitCode;

pub async fn run(global: &GlobalArgs, args: &AccuracyTensorsArgs) -> anyhow::Result<ExitCode> {
    let _ = (global, args);
    anyhow::bail!("accuracy tensors is not built yet")
}
