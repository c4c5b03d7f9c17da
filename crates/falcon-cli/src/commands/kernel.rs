//! `falcon kernel analyze|compare`. (Being written.)

use crate::cli::{GlobalArgs, KernelCommand};
use std::process::ExitCode;

pub async fn run(global: &GlobalArgs, command: &KernelCommand) -> anyhow::Result<ExitCode> {
    let _ = (global, command);
    anyhow::bail!("kernel commands are not built yet")
}
