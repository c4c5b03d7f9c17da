//! `falcon gc`: renders [`falcon_app::App::gc`] (job folders of ended, collected jobs; the profile cache
//! trimmed to its cap).

use crate::cli::{GcArgs, GlobalArgs};
use crate::output::{print_json, print_stdout};
use falcon_app::gc::{parse_age, parse_size, GcRequest};
use falcon_app::{App, AppError};
use std::process::ExitCode;

pub async fn run(global: &GlobalArgs, app: &App, args: &GcArgs) -> anyhow::Result<ExitCode> {
    let job_age = parse_age(&args.older_than).map_err(|e| AppError::usage(format!("--older-than: {e}")))?;
    let cache_cap = parse_size(&args.cache_cap).map_err(|e| AppError::usage(format!("--cache-cap: {e}")))?;
    let request = GcRequest { dry_run: args.dry_run, job_age, cache_cap };
    let report = app.gc(&request).await?;
    if global.json {
        print_json(&report)?;
        return Ok(ExitCode::SUCCESS);
    }
    let verb = if report.dry_run { "would remove" } else { "removed" };
    for item in &report.removed {
        print_stdout(&format!(
            "{verb} {} ({})",
            item.path.display(),
            falcon_app::render::numbers::human_bytes(item.bytes)
        ))?;
    }
    for item in &report.kept {
        let why = item.reason.as_deref().unwrap_or("kept");
        print_stdout(&format!("kept {}: {why}", item.path.display()))?;
    }
    print_stdout(&format!(
        "{verb} {} item(s), {}; profile cache {} → {} (cap {})",
        report.removed.len(),
        falcon_app::render::numbers::human_bytes(report.bytes),
        falcon_app::render::numbers::human_bytes(report.cache.bytes_before),
        falcon_app::render::numbers::human_bytes(report.cache.bytes_after),
        falcon_app::render::numbers::human_bytes(report.cache.cap)
    ))?;
    Ok(ExitCode::SUCCESS)
}
