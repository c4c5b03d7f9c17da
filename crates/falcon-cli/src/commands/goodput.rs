//! `falcon goodput`: renders [`falcon_app::App::goodput_report`] (ended runs' goodput and their chip-seconds by cause).

use crate::cli::{GlobalArgs, GoodputArgs};
use crate::output::{print_json, print_stdout};
use falcon_app::experiments::ListQuery;
use falcon_app::goodput::GoodputQuery;
use falcon_app::App;
use std::process::ExitCode;

pub async fn run(global: &GlobalArgs, app: &App, args: &GoodputArgs) -> anyhow::Result<ExitCode> {
    let query = GoodputQuery {
        list: ListQuery {
            session: args.session.clone(),
            goal: args.goal.clone(),
            since: args.since.clone(),
            name: args.name.clone(),
            labels: args.labels.clone(),
            ..Default::default()
        },
        pool: args.pool.clone(),
    };
    let report = app.goodput_report(&query).await?;
    if global.json {
        print_json(&report)?;
    } else {
        print_stdout(&falcon_app::render::goodput::report(&report))?;
    }
    Ok(ExitCode::SUCCESS)
}
