//! `falcon doctor`: renders EXP's checks; exits 1 when any fails.

use crate::cli::GlobalArgs;
use crate::output::{print_json, print_stdout};
use crate::settings;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, ContentArrangement, Table};
use std::process::ExitCode;

pub async fn run(global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let loaded = settings::load(global)?;
    let report = falcon_app::App::new(loaded.config).doctor().await?;
    if global.json {
        print_json(&report)?;
    } else {
        let source =
            loaded.file.as_ref().map_or("built-in defaults (no falcon.toml found)".into(), |f| f.display().to_string());
        print_stdout(&format!("config: {source}"))?;
        let mut table = Table::new();
        table.load_preset(UTF8_FULL_CONDENSED).set_content_arrangement(ContentArrangement::Dynamic);
        table.set_header(["component", "target", "status", "detail"]);
        for c in &report.checks {
            let detail = match &c.hint {
                Some(h) => format!("{}\nhint: {h}", c.detail),
                None => c.detail.clone(),
            };
            table.add_row([
                Cell::new(&c.component),
                Cell::new(&c.target),
                Cell::new(if c.ok { "ok" } else { "FAIL" }),
                Cell::new(detail),
            ]);
        }
        print_stdout(&table.to_string())?;
        let failed = report.checks.iter().filter(|c| !c.ok).count();
        print_stdout(&if failed == 0 { "all checks passed".to_string() } else { format!("{failed} check(s) failed") })?;
    }
    Ok(if report.ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
