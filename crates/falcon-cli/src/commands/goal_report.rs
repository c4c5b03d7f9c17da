//! `falcon goal report G`. (Being written.)

use crate::cli::{GlobalArgs, GoalReportArgs};
use falcon_exp::Exp;
use std::process::ExitCode;

pub async fn run(global: &GlobalArgs, exp: &Exp, args: &GoalReportArgs) -> anyhow::Result<ExitCode> {
    let _ = (global, exp, args);
    anyhow::bail!("goal report is not built yet")
}
