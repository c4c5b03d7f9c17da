//! `falcon bisect`: start a bisection (or take up one by its session), and with `--wait` carry it to its answer.

use crate::cli::{BisectArgs, GlobalArgs};
use crate::output::{print_json, print_stdout, CliFailure};
use falcon_app::contract::BisectView;
use falcon_app::App;
use falcon_core::ErrorKind;
use std::process::ExitCode;

pub async fn run(global: &GlobalArgs, app: &App, args: &BisectArgs) -> anyhow::Result<ExitCode> {
    let timeout = args.timeout_s.map(|s| std::time::Duration::from_secs(u64::from(s)));
    let view = match (&args.session, &args.spec) {
        (Some(session), _) => {
            let id = falcon_app::requests::BisectShowRequest { id: session.clone() }.session()?;
            if args.wait {
                app.advance_bisect(id).await?
            } else {
                app.bisect(id).await?
            }
        }
        (None, Some(file)) => {
            let text = falcon_app::files::read_spec_file(file)?;
            // A relative `code.repo` is read from the spec file's folder.
            let spec = falcon_core::spec::parse_spec(&text, &file.display().to_string())?;
            let repo = spec.code.as_ref().and_then(|code| {
                let mut anchored = spec.clone();
                anchored.anchor_code(file.parent().unwrap_or(std::path::Path::new("")));
                anchored.code.map(|c| c.repo).filter(|r| *r != code.repo)
            });
            let view = app.start_bisect(&args.request(text, repo)).await?;
            if !global.json {
                eprintln!(
                    "{}: bisecting {} commits for {} ({} run(s) submitted)",
                    view.session, view.commits, view.metric, view.runs
                );
            }
            view
        }
        (None, None) => return Err(CliFailure::new(ErrorKind::Usage, "name a SPEC, or --session s-N").into()),
    };
    let view = if args.wait && view.state != "decided" {
        let json = global.json;
        app.wait_bisect(view.session, timeout, |v| {
            if !json {
                eprintln!("{}: {}", v.session, v.message);
            }
        })
        .await?
    } else {
        view
    };
    render(global, &view)?;
    Ok(if args.fail_on_culprit && view.culprit.is_some() { ExitCode::from(5) } else { ExitCode::SUCCESS })
}

fn render(global: &GlobalArgs, view: &BisectView) -> anyhow::Result<()> {
    if global.json {
        return print_json(view);
    }
    print_stdout(&falcon_app::render::bisect::text(view))
}
