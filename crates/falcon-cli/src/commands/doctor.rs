//! `falcon doctor`: renders EXP's checks; exits 1 when any fails.

use crate::cli::{DoctorArgs, GlobalArgs};
use crate::output::{print_json, print_stdout};
use crate::settings;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, ContentArrangement, Table};
use falcon_app::render::numbers::{duration_ms, num};
use std::process::ExitCode;

pub async fn run(global: &GlobalArgs, args: &DoctorArgs) -> anyhow::Result<ExitCode> {
    let loaded = settings::load(global)?;
    let app = falcon_app::App::new(loaded.config);
    let mut report = app.doctor().await?;
    // The calibration is kept in the database: with the database failing, the report says so and nothing is measured.
    let database_ok = report.checks.iter().any(|c| c.component == "database" && c.ok);
    if args.calibrate && !database_ok {
        eprintln!("falcon doctor: --calibrate skipped: the database check failed (the calibration is kept there)");
    }
    if args.calibrate && database_ok {
        if !global.json {
            eprintln!("calibrating: an f32 matmul and a memory copy on every core (a second or two)");
        }
        let calibration = app.calibrate(&args.pool).await?;
        // The kept peaks replace the doctor's "not measured" line.
        if let Some(check) = report.checks.iter_mut().find(|c| c.component == "calibration") {
            check.detail = calibration
                .kept
                .iter()
                .map(|k| format!("{}: measured now ({} core(s) on {})", k.pool, k.cores, k.host))
                .collect::<Vec<_>>()
                .join("; ");
        }
        report.calibration = Some(calibration);
    }
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
        if let Some(c) = &report.calibration {
            let pools: Vec<&str> = c.kept.iter().map(|k| k.pool.as_str()).collect();
            print_stdout(&format!(
                "calibration: {} TFLOP/s f32 matmul and {} GB/s memory bandwidth on {} core(s), in {}; kept for {} \
                 (the XLA:CPU roofline, bound-by and MFU use it)",
                num(c.matmul_tflops),
                num(c.memory_gb_per_s),
                c.cores,
                duration_ms(c.elapsed_ms as f64),
                pools.join(", ")
            ))?;
        }
        let failed = report.checks.iter().filter(|c| !c.ok).count();
        print_stdout(&if failed == 0 { "all checks passed".to_string() } else { format!("{failed} check(s) failed") })?;
    }
    Ok(if report.ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
