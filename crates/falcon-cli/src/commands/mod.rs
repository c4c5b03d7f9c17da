//! One module per command; each turns parsed arguments into calls on EXP (or analysis) and renders the result.

mod accuracy;
mod accuracy_tensors;
mod config;
mod doctor;
mod exp;
mod goal;
pub(crate) mod goal_report;
mod init;
mod kernel;
mod profile;
mod profile_compare;
mod session;
mod worker;

use crate::cli::{Cli, Command, ConfigCommand};
use std::process::ExitCode;

/// Runs the parsed command.
pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match &cli.command {
        Command::Init(args) => init::run(&cli.global, args).await,
        Command::Doctor => doctor::run(&cli.global).await,
        Command::Config(ConfigCommand::Show) => config::show(&cli.global),
        Command::Exp(command) => exp::run(&cli.global, command).await,
        Command::Worker(args) => worker::run(&cli.global, args).await,
        Command::Goal(command) => goal::run(&cli.global, command).await,
        Command::Session(command) => session::run(&cli.global, command).await,
        Command::Pool(crate::cli::PoolCommand::List) => session::pools(&cli.global).await,
        Command::Profile(command) => profile::run(&cli.global, command).await,
        Command::Accuracy(crate::cli::AccuracyCommand::Compare(args)) => accuracy::run(&cli.global, args).await,
        Command::Accuracy(crate::cli::AccuracyCommand::Tensors(args)) => accuracy_tensors::run(&cli.global, args).await,
        Command::Kernel(command) => kernel::run(&cli.global, command).await,
    }
}
