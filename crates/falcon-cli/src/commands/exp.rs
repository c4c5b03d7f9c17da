//! `falcon exp …`: experiments through `falcon-app`; this module only parses arguments and renders results.

use crate::cli::{CompareArgs, ExpCommand, GlobalArgs, ListArgs};
use crate::output::{print_json, print_json_line, print_stdout, CliFailure};
use falcon_app::experiments::{parse_experiment_id as parse_id, split_bookkeeping, ExperimentDetail, SubmitProgress};
use falcon_app::render::numbers::{config_values, num, num_opt, percent, relative_percent, signed_percent};
use falcon_app::render::text::new_table;
use falcon_app::requests::ExperimentListRequest;
use falcon_app::streams::StreamEvent;
use falcon_app::App;
use falcon_core::ErrorKind;
use futures::StreamExt;
use std::process::ExitCode;

pub async fn run(global: &GlobalArgs, app: &App, command: &ExpCommand) -> anyhow::Result<ExitCode> {
    Ok(match command {
        ExpCommand::Submit { file, wait, timeout } => {
            submit(global, app, file, *wait, parse_timeout(timeout.as_deref())?).await?
        }
        ExpCommand::List(args) => list(global, app, args).await?,
        ExpCommand::Show { id, warmup } => {
            let (id, warmup) =
                falcon_app::requests::ExperimentShowRequest { id: id.clone(), warmup: *warmup }.show()?;
            render_view(global, &app.show_experiment(id, warmup).await?)?;
            ExitCode::SUCCESS
        }
        ExpCommand::Cancel { id } => {
            let view = app.cancel_experiment(parse_id(id)?).await?;
            if global.json {
                print_json(&view)?;
            } else {
                let rec = &view.view.record;
                print_stdout(&format!("{}: cancel requested (status {}); a worker stops its job", rec.id, rec.status))?;
            }
            ExitCode::SUCCESS
        }
        ExpCommand::Logs { id, follow: true, .. } => {
            // With --json: JSON Lines, `{"event": "log", "experiment", "source", "text"}` as text arrives, then
            // `{"event": "end", "experiment", "status"}` (falcon_app::streams). No server is beside the CLI, so
            // the stream drives the worker; a failed read ends the command with its error.
            let follow = falcon_app::streams::Follow { drive_worker: true, ..Default::default() };
            let mut events = std::pin::pin!(App::follow_logs(app, parse_id(id)?, follow));
            while let Some(event) = events.next().await {
                let event = event?;
                match &event {
                    _ if global.json => print_json_line(&event)?,
                    StreamEvent::Log { source, text, .. } => {
                        text.lines().try_for_each(|line| print_stdout(&format!("[{source}] {line}")))?
                    }
                    _ => {}
                }
            }
            ExitCode::SUCCESS
        }
        ExpCommand::Logs { id, follow: false, tail } => {
            let (id, tail) = falcon_app::requests::ExperimentLogLinesRequest { id: id.clone(), tail: *tail }.logs()?;
            let logs = app.experiment_logs(id, tail).await?;
            if global.json {
                let map: serde_json::Map<String, serde_json::Value> =
                    logs.into_iter().map(|(k, v)| (k, v.into())).collect();
                print_json(&map)?;
            } else {
                for (name, text) in logs {
                    print_stdout(&format!("==> {name} <=="))?;
                    print_stdout(text.trim_end())?;
                }
            }
            ExitCode::SUCCESS
        }
        ExpCommand::Artifacts { id, page } => {
            let r = falcon_app::requests::PageRequest::from(page);
            let r =
                falcon_app::requests::ExperimentArtifactsRequest { id: id.clone(), limit: r.limit, cursor: r.cursor };
            let (id, limit) = r.page()?;
            let page = app.experiment_artifacts(id, r.cursor.as_deref(), limit).await?;
            if global.json {
                crate::output::print_page(&page)?;
            } else {
                let mut table = new_table(false, ["kind", "size", "sha256", "uri"]);
                for a in &page.items {
                    // A key that had to shorten or escape the file's name: the name the job wrote, beside it.
                    let uri = match &a.name {
                        Some(name) => format!("{}\n(written as {name})", a.uri),
                        None => a.uri.clone(),
                    };
                    table.add_row([a.kind.as_str().to_string(), a.size.to_string(), short(&a.sha256), uri]);
                }
                print_stdout(&table.to_string())?;
                if let Some(next) = &page.next_cursor {
                    print_stdout(&format!("more: --cursor {next}"))?;
                }
            }
            ExitCode::SUCCESS
        }
        ExpCommand::Diff { a, b } => {
            // JSON: every change, each with its `group` (`bookkeeping` for name, goal, Falcon's labels…). Text:
            // the configuration changes, then the bookkeeping ones in a section of their own.
            let (a, b) = falcon_app::requests::ExperimentDiffRequest { a: a.clone(), b: b.clone() }.pair()?;
            let changes = app.diff_experiments(a, b).await?;
            if global.json {
                print_json(&falcon_app::contract::DiffBody { changes: falcon_app::contract::changes(&changes) })?;
            } else if changes.is_empty() {
                print_stdout("no differences")?;
            } else {
                let (config, bookkeeping) = split_bookkeeping(&changes);
                if config.is_empty() {
                    print_stdout("no configuration differences")?;
                }
                for c in &config {
                    print_stdout(&change_line(c))?;
                }
                if !bookkeeping.is_empty() {
                    print_stdout("bookkeeping (what the runs are called and for; not what they run):")?;
                    for c in &bookkeeping {
                        print_stdout(&format!("  {}", change_line(c)))?;
                    }
                }
            }
            ExitCode::SUCCESS
        }
        ExpCommand::Compare(args) => compare(global, app, args).await?,
        ExpCommand::History(args) => history(global, app, args).await?,
    })
}

/// `--timeout DURATION` as a duration (a usage error when it does not parse).
pub(crate) fn parse_timeout(text: Option<&str>) -> anyhow::Result<Option<std::time::Duration>> {
    text.map(|t| {
        falcon_core::spec::parse_duration(t)
            .map(std::time::Duration::from_secs)
            .map_err(|e| CliFailure::new(ErrorKind::Usage, format!("--timeout: {e}")).into())
    })
    .transpose()
}

pub(crate) async fn submit(
    global: &GlobalArgs,
    app: &App,
    file: &std::path::Path,
    wait: bool,
    timeout: Option<std::time::Duration>,
) -> anyhow::Result<ExitCode> {
    let text = falcon_app::files::read_spec_file(file)?;
    let mut spec = falcon_core::spec::parse_spec(&text, &file.display().to_string())?;
    spec.anchor_code(file.parent().unwrap_or(std::path::Path::new(".")));
    let json = global.json;
    let (view, events) = app
        .submit_experiment(&spec, wait, timeout, |p| match p {
            _ if json => {}
            SubmitProgress::Submitted(rec) => {
                eprintln!("{}: submitted `{}` (config {})", rec.id, rec.name, short(&rec.config_hash))
            }
            SubmitProgress::Status(e) => eprintln!("{}: {}", e.id, e.status),
        })
        .await?;
    super::worker::report_events(false, &events)?;
    render_view(global, &view)?;
    Ok(if wait && view.view.record.status != falcon_core::status::ExperimentStatus::Completed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

async fn list(global: &GlobalArgs, app: &App, args: &ListArgs) -> anyhow::Result<ExitCode> {
    let request = ExperimentListRequest::from(args);
    let page = app.list_experiments(&request.query()?, request.cursor.as_deref()).await?;
    let rows = &page.items;
    if global.json {
        crate::output::print_page(&page)?;
    } else {
        let mut header = vec!["id", "name", "status", "scenario", "attempt", "config", "created"];
        if args.with_metrics {
            header.push("median of each metric");
        }
        let mut table = new_table(false, header.into_iter().collect::<Vec<_>>());
        for item in rows {
            let r = &item.record;
            let mut row = vec![
                r.id.to_string(),
                r.name.clone(),
                r.status.to_string(),
                r.scenario.to_string(),
                r.attempt.to_string(),
                short(&r.config_hash),
                r.created.to_rfc3339(),
            ];
            if let Some(metrics) = &item.metrics {
                let medians: Vec<String> =
                    metrics.iter().map(|(name, m)| format!("{name} {}", num(m.median))).collect();
                row.push(if medians.is_empty() { "—".into() } else { medians.join("\n") });
            }
            table.add_row(row);
        }
        print_stdout(&table.to_string())?;
        if let Some(next) = &page.next_cursor {
            print_stdout(&format!("more: --cursor {next}"))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn compare(global: &GlobalArgs, app: &App, args: &CompareArgs) -> anyhow::Result<ExitCode> {
    let req = falcon_app::requests::ExperimentCompareRequest::from(args).compare()?;
    let cmp = app.compare_experiments(&req).await?;
    if global.json {
        print_json(&cmp)?;
    } else {
        print_stdout(&falcon_app::render::verdict::line(&cmp.verdict))?;
        if let Some(next) = falcon_app::render::verdict::how_to_decide(&cmp) {
            print_stdout(&next)?;
        }
        let mut t = new_table(false, ["side", "experiment", "name", "config", "median", "spread", "steps"]);
        for (side, rows) in [("A", &cmp.sides.a), ("B", &cmp.sides.b)] {
            for r in rows {
                t.add_row([
                    side.to_string(),
                    r.experiment.to_string(),
                    r.name.clone(),
                    r.config_hash.chars().take(12).collect(),
                    num(r.median),
                    num_opt(r.spread),
                    r.n_steps.to_string(),
                ]);
            }
        }
        print_stdout(&t.to_string())?;
        for n in cmp.noise_history.iter().filter(|n| n.cv.is_some()) {
            print_stdout(&format!(
                "history of config {}: {} other run(s), between-run CV {}",
                n.config_hash.chars().take(12).collect::<String>(),
                n.runs,
                percent(n.cv.unwrap_or_default() * 100.0)
            ))?;
        }
        for note in &cmp.verdict.notes {
            print_stdout(&format!("note: {note}"))?;
        }
    }
    Ok(if args.fail_on_regression && cmp.verdict.verdict == falcon_core::stats::VerdictKind::Regressed {
        ExitCode::from(ErrorKind::Regression.exit_code() as u8)
    } else {
        ExitCode::SUCCESS
    })
}

async fn history(global: &GlobalArgs, app: &App, args: &crate::cli::HistoryArgs) -> anyhow::Result<ExitCode> {
    let view = app.history(&falcon_app::requests::ExperimentHistoryRequest::from(args)).await?;
    let history = &view.history;
    if global.json {
        print_json(&view)?;
    } else {
        if let Some(note) = &view.note {
            print_stdout(&format!("note: {note}"))?;
        }
        let values: Vec<f64> = history.points.iter().map(|p| p.value).collect();
        print_stdout(&format!(
            "{}: {} run(s), {} shift(s){}",
            history.metric,
            history.points.len(),
            history.changes.len(),
            history.noise.map_or(String::new(), |n| format!(", run-to-run CV {}", percent(n * 100.0))),
        ))?;
        if !values.is_empty() {
            print_stdout(&format!("  {}", falcon_app::render::sparkline(&values)))?;
        }
        let mut points = new_table(false, ["#", "experiment", "name", "value", "spread", "steps", ""]);
        for (i, p) in history.points.iter().enumerate() {
            let mark = history.changes.iter().find(|c| c.index == i).map_or(String::new(), |c| {
                format!(
                    "◀ shift {}{}",
                    signed_percent(c.delta_rel * 100.0),
                    if c.regression == Some(true) { " (regression)" } else { "" }
                )
            });
            points.add_row([
                i.to_string(),
                p.experiment.to_string(),
                p.name.clone(),
                num(p.value),
                num_opt(p.spread),
                p.n_steps.to_string(),
                mark,
            ]);
        }
        if !history.points.is_empty() {
            print_stdout(&points.to_string())?;
        }
        let mut t =
            new_table(false, ["at", "runs before/after", "before", "after", "change", "95% CI", "p", "regression"]);
        for c in &history.changes {
            t.add_row([
                c.experiment.to_string(),
                format!("{}/{}", c.runs_before, c.runs_after),
                num(c.before),
                num(c.after),
                relative_percent(Some(c.delta_rel)),
                format!("[{}, {}]", relative_percent(Some(c.ci_low_rel)), relative_percent(Some(c.ci_high_rel))),
                falcon_app::render::verdict::p_value(Some(c.p_value)),
                c.regression.map_or("?".into(), |r| if r { "yes".into() } else { "no".into() }),
            ]);
        }
        if !history.changes.is_empty() {
            print_stdout(&t.to_string())?;
        }
        print_stdout(&history.power_note)?;
    }
    let regressed = history.changes.iter().any(|c| c.regression == Some(true));
    Ok(if args.fail_on_regression && regressed {
        ExitCode::from(ErrorKind::Regression.exit_code() as u8)
    } else {
        ExitCode::SUCCESS
    })
}

fn render_view(global: &GlobalArgs, detail: &ExperimentDetail) -> anyhow::Result<()> {
    if global.json {
        return print_json(detail);
    }
    print_stdout(&falcon_app::render::experiment::text(detail))
}

/// `config.optimizer.lr: 0.0003 → 0.0006`: a change as `exp diff` prints it, fractional numbers by the shared
/// formatter unless two values would then read the same ([`config_values`]).
fn change_line(c: &falcon_app::experiments::Change) -> String {
    let values = config_values(&[c.a.as_ref(), c.b.as_ref()]);
    format!("{}: {} → {}", c.path, values[0], values[1])
}

/// The first 12 characters of a hash for a table (the whole value when it is shorter: a stored value is never
/// sliced past its end).
fn short(hash: &str) -> String {
    hash.chars().take(12).collect()
}
