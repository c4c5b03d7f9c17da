//! `falcon goal …`: optimization goals through EXP.

use crate::cli::{GlobalArgs, GoalClose, GoalCommand};
use crate::output::{print_json, print_stdout, CliFailure};
use falcon_app::goals::{parse_goal_id as parse, GoalRecord};
use falcon_app::render::numbers::{num, num_opt, relative_percent};
use falcon_app::render::text::new_table;
use falcon_app::App;
use falcon_core::status::GoalStatus;
use falcon_core::ErrorKind;
use std::process::ExitCode;

pub async fn run(global: &GlobalArgs, app: &App, command: &GoalCommand) -> anyhow::Result<ExitCode> {
    let usage = |m: String| CliFailure::new(ErrorKind::Usage, m);
    match command {
        GoalCommand::Create(args) => {
            let req = falcon_app::requests::GoalCreateRequest::from(args);
            render(global, &app.create_goal(&req).await?)?;
        }
        GoalCommand::List(args) => {
            let r = falcon_app::requests::GoalListRequest::from(args);
            let page = app.list_goals(r.status.map(|s| s.as_str()), r.cursor.as_deref(), r.page_size()?).await?;
            let goals = &page.items;
            if global.json {
                crate::output::print_page(&page)?;
            } else {
                let mut t = new_table(false, ["id", "priority", "status", "owner", "metric", "target", "title"]);
                for g in goals {
                    t.add_row([
                        g.id.to_string(),
                        g.priority.to_string(),
                        g.status.to_string(),
                        g.owner.clone().unwrap_or_default(),
                        format!("{} ({})", g.metric, g.direction),
                        g.target.map_or("—".into(), |t| t.to_string()),
                        g.title.clone(),
                    ]);
                }
                print_stdout(&t.to_string())?;
            }
        }
        GoalCommand::Show { id } => render(global, &app.goal(parse(id)?).await?)?,
        GoalCommand::SetBaseline { id, experiment, clear: _ } => {
            render(global, &app.set_goal_baseline(parse(id)?, experiment.as_deref()).await?)?
        }
        GoalCommand::Claim { id, next, owner, lease_s } => {
            let id = match (id, next) {
                (Some(id), false) => Some(parse(id)?.to_string()),
                (None, true) => None,
                _ => return Err(usage("name a goal or pass --next".into()).into()),
            };
            let owner = owner_or_user(owner);
            let request = falcon_app::requests::GoalClaimRequest { id, owner: Some(owner.clone()), lease_s: *lease_s };
            let (id, lease) = request.claim()?;
            let goal = app.claim_goal(id, &owner, lease).await?;
            render(global, &goal)?;
        }
        GoalCommand::Release(close) => close_goal(global, app, close, GoalStatus::Open).await?,
        GoalCommand::Achieve(close) => close_goal(global, app, close, GoalStatus::Achieved).await?,
        GoalCommand::Abandon(close) => close_goal(global, app, close, GoalStatus::Abandoned).await?,
        GoalCommand::Report(args) => return crate::commands::goal_report::run(global, app, args).await,
        GoalCommand::Compare { id } => {
            let cmp = app.compare_goal(parse(id)?).await?;
            if global.json {
                print_json(&cmp)?;
            } else {
                let g = &cmp.goal;
                print_stdout(&format!(
                    "{} {}: {} ({}), target {}, baseline {}",
                    g.id,
                    g.title,
                    g.metric,
                    g.direction,
                    g.target.map_or("—".into(), num),
                    num_opt(cmp.baseline_value)
                ))?;
                let mut t =
                    new_table(false, ["rank", "experiment", "name", "value", "vs baseline", "verdict", "meets target"]);
                for r in &cmp.rows {
                    t.add_row([
                        r.rank.to_string(),
                        r.experiment.to_string(),
                        r.name.clone(),
                        format!("{} ({})", num(r.value), r.statistic),
                        relative_percent(r.delta_vs_baseline),
                        falcon_app::render::goal::row_verdict(r),
                        r.meets_target.map_or("—".into(), |m| if m { "yes".into() } else { "no".into() }),
                    ]);
                }
                print_stdout(&t.to_string())?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn close_goal(global: &GlobalArgs, app: &App, close: &GoalClose, to: GoalStatus) -> anyhow::Result<()> {
    let owner = owner_or_user(&close.owner);
    let request = falcon_app::requests::GoalCloseRequest {
        id: parse(&close.id)?.to_string(),
        reason: close.reason.clone(),
        owner: Some(owner.clone()),
    };
    let goal = app.close_goal(request.goal()?, to, &request.reason, Some(&owner)).await?;
    render(global, &goal)
}

fn render(global: &GlobalArgs, g: &GoalRecord) -> anyhow::Result<()> {
    if global.json {
        return print_json(&falcon_app::goals::GoalView::from(g.clone()));
    }
    print_stdout(&format!("{} [{}] {}", g.id, g.status, g.title))?;
    print_stdout(&format!(
        "  metric {} ({}), target {}, baseline {}, priority {}{}",
        g.metric,
        g.direction,
        g.target.map_or("—".into(), num),
        g.baseline.map_or("—".into(), |b| b.to_string()),
        g.priority,
        g.owner.as_ref().map_or(String::new(), |o| format!(
            ", claimed by {o} until {}",
            g.lease_expires.map_or("—".into(), |t| t.to_rfc3339())
        ))
    ))
}

fn owner_or_user(owner: &Option<String>) -> String {
    owner.clone().or_else(|| std::env::var("USER").ok()).unwrap_or_else(|| "falcon".into())
}
