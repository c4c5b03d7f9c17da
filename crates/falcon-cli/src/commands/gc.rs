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
        print_stdout(&format!("{verb} {} ({})", item.path.display(), human(item.bytes)))?;
    }
    for item in &report.kept {
        let why = item.reason.as_deref().unwrap_or("kept");
        print_stdout(&format!("kept {}: {why}", item.path.display()))?;
    }
    print_stdout(&format!(
        "{verb} {} item(s), {}; profile cache {} → {} (cap {})",
        report.removed.len(),
        human(report.bytes),
        human(report.cache.bytes_before),
        human(report.cache.bytes_after),
        human(report.cache.cap)
    ))?;
    Ok(ExitCode::SUCCESS)
}

fn human(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}
