//! `falcon session …` and `falcon pool list`.

use crate::cli::{GlobalArgs, SessionCommand};
use crate::output::{print_json, print_stdout, CliFailure};
use falcon_app::experiments::show_value;
use falcon_app::goals::{parse_goal_id, parse_session_id, SessionDetail, SessionGrid, SessionRequest};
use falcon_app::render::numbers::significant;
use falcon_app::render::text::new_table;
use falcon_app::session_grid::value_label;
use falcon_app::App;
use falcon_core::ErrorKind;
use std::io::IsTerminal;
use std::process::ExitCode;

pub async fn run(global: &GlobalArgs, app: &App, command: &SessionCommand) -> anyhow::Result<ExitCode> {
    match command {
        SessionCommand::Submit { file, goal, wait, timeout, repeats } => {
            let timeout = super::exp::parse_timeout(timeout.as_deref())?;
            let text = falcon_app::files::read_spec_file(file)?;
            let goal = goal
                .as_deref()
                .map(parse_goal_id)
                .transpose()
                .map_err(|e| CliFailure::new(ErrorKind::Usage, format!("--goal: {e}")))?;
            let dir = file.parent().map(std::path::Path::to_path_buf).unwrap_or_default();
            let load = move |base: &str| falcon_app::files::read_spec_file(&dir.join(base)).map_err(|e| e.to_string());
            let name = file.file_stem().map_or("session".into(), |s| s.to_string_lossy().into_owned());
            let label = file.display().to_string();
            let request = SessionRequest {
                name: &name,
                sweep_text: &text,
                file_label: &label,
                goal,
                wait: *wait,
                timeout,
                repeats: *repeats,
            };
            let json = global.json;
            let progress = (!json && *wait && std::io::stderr().is_terminal()).then(Progress::new);
            let result = app
                .submit_session(
                    &request,
                    load,
                    |view| {
                        if !json {
                            eprintln!("{}: {} experiment(s) submitted", view.session.id, view.experiments.len());
                        }
                    },
                    |runs| {
                        if let Some(p) = &progress {
                            p.show(runs);
                        }
                    },
                )
                .await;
            if let Some(p) = progress {
                p.finish();
            }
            let (view, events) = result?;
            super::worker::report_events(false, &events)?;
            render(global, &view)?;
        }
        SessionCommand::Show { id, metric } => {
            render(global, &app.session_with_metric(parse_session_id(id)?, metric.as_deref()).await?)?
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The session: its experiments (with the median of each stored metric, and `re-run of baseline` on a point
/// whose config hash is its baseline's), then the keys that differ, configuration first and bookkeeping
/// (names, goal, Falcon's labels) last, then the sweep grid (the dashboard's session page).
fn render(global: &GlobalArgs, detail: &SessionDetail) -> anyhow::Result<()> {
    if global.json {
        return print_json(detail);
    }
    let view = &detail.view;
    print_stdout(&format!(
        "{} {} — {} ({} experiments)",
        view.session.id,
        view.session.name,
        view.status,
        view.experiments.len()
    ))?;
    let mut t = new_table(false, ["id", "name", "status", "attempt", "config", "median of each metric", ""]);
    for (e, row) in detail.experiments() {
        let medians: Vec<String> =
            row.metrics.iter().map(|(name, m)| format!("{name} {}", significant(Some(m.median), 4))).collect();
        t.add_row([
            e.id.to_string(),
            e.name.clone(),
            e.status.to_string(),
            e.attempt.to_string(),
            e.config_hash.chars().take(12).collect(),
            if medians.is_empty() { "—".into() } else { medians.join("\n") },
            if row.baseline_rerun { "re-run of baseline".into() } else { String::new() },
        ]);
    }
    print_stdout(&t.to_string())?;
    if !view.differences.is_empty() {
        let mut d = new_table(false, ["key", "group", "values"]);
        let (config, bookkeeping): (Vec<_>, Vec<_>) = view.differences.iter().partition(|r| !r.group.is_bookkeeping());
        for row in config.into_iter().chain(bookkeeping) {
            let values: Vec<String> = row.values.iter().map(|v| show_value(v.as_ref())).collect();
            d.add_row([row.path.clone(), row.group.to_string(), values.join(" | ")]);
        }
        print_stdout(&d.to_string())?;
    }
    grid(&detail.grid)
}

/// The sweep as the dashboard draws it: one table per facet, rows × columns of the grid's metric, `★` on the
/// best cell, `(n)` where repeats share a cell.
fn grid(g: &SessionGrid) -> anyhow::Result<()> {
    let label = |v: Option<&serde_json::Value>| v.map(value_label).unwrap_or_else(|| "runs".into());
    let rows: Vec<Option<&serde_json::Value>> =
        if g.row_values.is_empty() { vec![None] } else { g.row_values.iter().map(Some).collect() };
    let cols: Vec<Option<&serde_json::Value>> =
        if g.column_values.is_empty() { vec![None] } else { g.column_values.iter().map(Some).collect() };
    let direction = match g.direction {
        Some(falcon_core::stats::Direction::LowerIsBetter) => "lower is better, ★ the best",
        Some(falcon_core::stats::Direction::HigherIsBetter) => "higher is better, ★ the best",
        None => "no standard direction: no cell is best",
    };
    print_stdout(&format!("\n{} over the sweep (median of each point's runs; {direction})", g.metric))?;
    for facet in &g.facets {
        if !facet.fixed.is_empty() {
            let fixed: Vec<String> =
                facet.fixed.iter().map(|f| format!("{} = {}", f.key, value_label(&f.value))).collect();
            print_stdout(&fixed.join(", "))?;
        }
        let corner = match (&g.rows_key, &g.columns_key) {
            (Some(r), Some(c)) => format!("{r} ↓ · {c} →"),
            (None, Some(c)) => format!("{c} →"),
            _ => String::new(),
        };
        let header: Vec<String> =
            std::iter::once(corner).chain(cols.iter().map(|c| c.map(value_label).unwrap_or_default())).collect();
        let mut t = new_table(false, header.iter().map(String::as_str));
        for (ri, r) in rows.iter().enumerate() {
            let mut line = vec![label(*r)];
            for cell in facet.cells.get(ri).into_iter().flatten() {
                line.push(match (cell.experiments.first(), cell.value) {
                    (None, _) => "–".to_string(),
                    (Some(id), None) => {
                        format!("{id} {}", cell.statuses.first().map(|s| s.to_string()).unwrap_or_default())
                    }
                    (Some(id), Some(v)) => format!(
                        "{}{}{} {id}",
                        if cell.best { "★ " } else { "" },
                        significant(Some(v), 4),
                        if cell.experiments.len() > 1 {
                            format!(" (n = {})", cell.experiments.len())
                        } else {
                            String::new()
                        },
                    ),
                });
            }
            t.add_row(line);
        }
        print_stdout(&t.to_string())?;
    }
    if g.no_axes {
        print_stdout("(no stored sweep axes: the runs are one row)")?;
    }
    Ok(())
}

pub async fn pools(global: &GlobalArgs, app: &App, page: &crate::cli::PageArgs) -> anyhow::Result<ExitCode> {
    let page = app.pools(page.cursor.as_deref(), page.limit).await?;
    let pools = &page.items;
    if global.json {
        crate::output::print_page(&page)?;
    } else {
        let mut t = new_table(
            false,
            ["pool", "backend", "zone", "platform", "accelerators", "chips used", "running", "waiting"],
        );
        for u in pools {
            let p = &u.pool;
            t.add_row([
                p.name.clone(),
                format!("{:?}", p.backend).to_lowercase(),
                p.zone.clone(),
                format!("{:?}", p.platform).to_lowercase(),
                p.accelerators.join(", "),
                format!("{}/{}", u.used, p.capacity),
                u.running.to_string(),
                u.waiting.to_string(),
            ]);
        }
        print_stdout(&t.to_string())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Progress of a session wait on a terminal (stderr; never with --json): a bar of experiments ended out of N
/// and, below it, the live ones — each one's status, the step it reached and why it waits.
struct Progress {
    bars: indicatif::MultiProgress,
    overall: indicatif::ProgressBar,
    detail: indicatif::ProgressBar,
}

impl Progress {
    fn new() -> Progress {
        let bars = indicatif::MultiProgress::with_draw_target(indicatif::ProgressDrawTarget::stderr());
        let style =
            indicatif::ProgressStyle::with_template("{spinner} {pos}/{len} experiments ended {wide_bar} {elapsed}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
        let overall = bars.add(indicatif::ProgressBar::new(0).with_style(style));
        let detail = bars.add(indicatif::ProgressBar::new_spinner());
        detail.set_style(
            indicatif::ProgressStyle::with_template("  {wide_msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        Progress { bars, overall, detail }
    }

    fn show(&self, runs: &[falcon_app::goals::RunProgress]) {
        self.overall.set_length(runs.len() as u64);
        self.overall.set_position(runs.iter().filter(|r| r.status.is_terminal()).count() as u64);
        self.overall.tick();
        let live: Vec<String> = runs
            .iter()
            .filter(|r| !r.status.is_terminal())
            .take(6)
            .map(|r| {
                let mut s = format!("{} {}", r.experiment, r.status);
                if let Some(step) = r.step {
                    s.push_str(&format!(" step {step}"));
                }
                if let Some(reason) = r.reason.as_deref().filter(|_| r.step.is_none()) {
                    s.push_str(&format!(" ({reason})"));
                }
                s
            })
            .collect();
        self.detail.set_message(live.join(" · "));
    }

    fn finish(self) {
        self.detail.finish_and_clear();
        self.overall.finish_and_clear();
        let _ = self.bars.clear();
    }
}
