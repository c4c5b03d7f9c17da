//! One module per command; each parses its arguments, calls one `falcon-app` use case and renders the result.

mod accuracy;
mod accuracy_tensors;
mod bisect;
mod config;
mod doctor;
mod exp;
mod gc;
mod goal;
pub(crate) mod goal_report;
mod goodput;
mod init;
mod kernel;
mod mcp;
mod profile;
mod profile_compare;
mod profile_fan_out;
mod serve;
mod session;
mod skills;
mod token;
mod worker;

use crate::cli::{Cli, Command, ConfigCommand};
use std::process::ExitCode;

/// Runs the parsed command.
pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let global = &cli.global;
    // Connects nothing until a use case needs it; init, doctor and config show read the settings themselves.
    let app = crate::settings::app(global);
    // The user submits from here: a spec's `code.repo` may be a local path, and the work tree around this folder
    // is recorded for a spec without `code`.
    if let Ok(dir) = std::env::current_dir() {
        app.submit_from(dir);
    }
    let result = match &cli.command {
        Command::Init(args) => init::run(global, args).await,
        Command::Doctor(args) => doctor::run(global, args).await,
        Command::Config(ConfigCommand::Show) => config::show(global),
        Command::Exp(command) => exp::run(global, &app, command).await,
        Command::Worker(args) => worker::run(global, &app, args).await,
        Command::Gc(args) => gc::run(global, &app, args).await,
        Command::Goodput(args) => goodput::run(global, &app, args).await,
        Command::Goal(command) => goal::run(global, &app, command).await,
        Command::Bisect(args) => bisect::run(global, &app, args).await,
        Command::Session(command) => session::run(global, &app, command).await,
        Command::Pool(crate::cli::PoolCommand::List(page)) => session::pools(global, &app, page).await,
        Command::Profile(command) => profile::run(global, &app, command).await,
        Command::Accuracy(crate::cli::AccuracyCommand::Compare(args)) => accuracy::run(global, &app, args).await,
        Command::Accuracy(crate::cli::AccuracyCommand::Tensors(args)) => {
            accuracy_tensors::run(global, &app, args).await
        }
        Command::Kernel(command) => kernel::run(global, &app, command).await,
        Command::Context(args) => skills::context(global, &app, args).await,
        Command::Skills(command) => skills::run(global, command),
        Command::Token(command) => token::run(global, &app, command).await,
        Command::Serve(args) => serve::run(global, args).await,
        Command::Mcp(args) => mcp::run(global, args).await,
    };
    app.close().await;
    result
}
