//! `falcon goal report G [--format table|md|html|json] [-o FILE] [--top N]`: builds the report with
//! [`falcon_app::App::goal_report`] and renders it with [`falcon_app::render::goal`].

use crate::cli::{GlobalArgs, GoalReportArgs, ReportFormat};
use falcon_app::render::goal::{render_html, render_md, render_table};
use falcon_app::App;
use std::process::ExitCode;

pub async fn run(global: &GlobalArgs, app: &App, args: &GoalReportArgs) -> anyhow::Result<ExitCode> {
    let format = crate::output::report_format(global, args.format)?;
    let (id, top) = falcon_app::requests::GoalReportRequest { id: args.id.clone(), top: args.top }.report()?;
    let report = app.goal_report(id, top).await?;
    let text = match format {
        ReportFormat::Json => serde_json::to_string_pretty(&report)?,
        ReportFormat::Table => render_table(&report, top),
        ReportFormat::Md => render_md(&report, top),
        ReportFormat::Html => render_html(&report, top),
    };
    crate::output::emit_report(global, args.output.as_deref(), args.force, text.trim_end(), format)?;
    Ok(ExitCode::SUCCESS)
}
