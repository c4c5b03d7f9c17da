//! `falcon goodput`: renders [`falcon_app::App::goodput_report`] (ended runs' goodput and their chip-seconds by cause).

use crate::cli::{GlobalArgs, GoodputArgs};
use crate::output::{print_json, print_stdout};
use falcon_app::App;
use std::process::ExitCode;

pub async fn run(global: &GlobalArgs, app: &App, args: &GoodputArgs) -> anyhow::Result<ExitCode> {
    let request = falcon_app::requests::GoodputRequest {
        session: args.session.clone(),
        goal: args.goal.clone(),
        pool: args.pool.clone(),
        since: args.since.clone(),
        name: args.name.clone(),
        label: args.labels.clone(),
    };
    let report = app.goodput_report(&request.query()).await?;
    if global.json {
        print_json(&report)?;
    } else {
        print_stdout(&falcon_app::render::goodput::report(&report))?;
    }
    Ok(ExitCode::SUCCESS)
}
