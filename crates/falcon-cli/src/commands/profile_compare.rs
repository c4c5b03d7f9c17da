//! `falcon profile compare A B`. (Being written.)

use crate::cli::{GlobalArgs, ProfileCompareArgs};
use falcon_analysis::service::Analysis;
use std::process::ExitCode;

pub async fn run(global: &GlobalArgs, analysis: &Analysis, args: &ProfileCompareArgs) -> anyhow::Result<ExitCode> {
    let _ = (global, analysis, args);
    anyhow::bail!("profile compare is not built yet")
}
