//! `falcon session …` and `falcon pool list`.

use crate::cli::{GlobalArgs, SessionCommand};
use crate::commands::exp::table;
use crate::output::{print_json, print_stdout, CliFailure};
use crate::settings;
use falcon_core::ids::{GoalId, SessionId};
use falcon_core::ErrorKind;
use falcon_exp::goals::SessionView;
use falcon_exp::Exp;
use std::process::ExitCode;

pub async fn run(global: &GlobalArgs, command: &SessionCommand) -> anyhow::Result<ExitCode> {
    let loaded = settings::load(global)?;
    let exp = Exp::connect(&loaded.config).await?;
    let code = match command {
        SessionCommand::Submit { file, goal, wait } => {
            let text = std::fs::read_to_string(file).map_err(|e| {
                let kind =
                    if e.kind() == std::io::ErrorKind::NotFound { ErrorKind::NotFound } else { ErrorKind::Failure };
                CliFailure::new(kind, format!("reading {}: {e}", file.display()))
            })?;
            let goal = goal
                .as_deref()
                .map(str::parse::<GoalId>)
                .transpose()
                .map_err(|e| CliFailure::new(ErrorKind::Usage, format!("--goal: {e}")))?;
            let dir = file.parent().map(std::path::Path::to_path_buf).unwrap_or_default();
            let load = |base: &str| {
                std::fs::read_to_string(dir.join(base)).map_err(|e| format!("{}: {e}", dir.join(base).display()))
            };
            let specs = falcon_exp::sweep::expand(&text, &file.display().to_string(), load)?;
            let name = file.file_stem().map_or("session".into(), |s| s.to_string_lossy().into_owned());
            let sweep_json = serde_json::json!({ "file": file.display().to_string(), "experiments": specs.len() });
            let mut view = exp.submit_session(&name, goal, sweep_json, &specs).await?;
            if !global.json {
                eprintln!("{}: {} experiment(s) submitted", view.session.id, view.experiments.len());
            }
            if *wait {
                for e in &view.experiments {
                    exp.wait(e.id, |_| {}).await?;
                }
                let analysis = falcon_analysis::service::Analysis::connect(exp.config()).await?;
                super::worker::analyze_completed(false, &analysis).await;
                analysis.close().await;
                view = exp.session(view.session.id).await?;
            }
            render(global, &view)?;
            ExitCode::SUCCESS
        }
        SessionCommand::Show { id } => {
            let id: SessionId = id
                .parse()
                .map_err(|e: falcon_core::ids::IdParseError| CliFailure::new(ErrorKind::Usage, e.to_string()))?;
            render(global, &exp.session(id).await?)?;
            ExitCode::SUCCESS
        }
    };
    exp.close().await;
    Ok(code)
}

fn render(global: &GlobalArgs, view: &SessionView) -> anyhow::Result<()> {
    if global.json {
        return print_json(view);
    }
    print_stdout(&format!(
        "{} {} — {} ({} experiments)",
        view.session.id,
        view.session.name,
        view.status,
        view.experiments.len()
    ))?;
    let mut t = table(["id", "name", "status", "attempt"]);
    for e in &view.experiments {
        t.add_row([e.id.to_string(), e.name.clone(), e.status.to_string(), e.attempt.to_string()]);
    }
    print_stdout(&t.to_string())?;
    if !view.differences.is_empty() {
        let mut d = table(["key", "values"]);
        for row in &view.differences {
            let values: Vec<String> = row.values.iter().map(|v| falcon_exp::diff::show(v.as_ref())).collect();
            d.add_row([row.path.clone(), values.join(" | ")]);
        }
        print_stdout(&d.to_string())?;
    }
    Ok(())
}

pub async fn pools(global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let loaded = settings::load(global)?;
    let exp = Exp::connect(&loaded.config).await?;
    let pools = exp.pools().await?;
    if global.json {
        print_json(&pools)?;
    } else {
        let mut t = table(["pool", "backend", "zone", "platform", "accelerators", "chips used", "running", "waiting"]);
        for u in &pools {
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
    exp.close().await;
    Ok(ExitCode::SUCCESS)
}
