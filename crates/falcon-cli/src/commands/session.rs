//! `falcon session …` and `falcon pool list`.

use crate::cli::{GlobalArgs, SessionCommand};
use crate::output::{print_json, print_stdout, CliFailure};
use falcon_app::goals::{parse_goal_id, SessionDetail, SessionRequest};
use falcon_app::render::text::new_table;
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
            let request = falcon_app::requests::SessionShowRequest { id: id.clone(), metric: metric.clone() };
            render(global, &app.session_with_metric(request.session()?, request.metric.as_deref()).await?)?
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
    print_stdout(&falcon_app::render::session::text(detail))
}

pub async fn pools(global: &GlobalArgs, app: &App, page: &crate::cli::PageArgs) -> anyhow::Result<ExitCode> {
    let r = falcon_app::requests::PageRequest::from(page);
    let page = app.pools(r.cursor.as_deref(), r.page_size()?).await?;
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
