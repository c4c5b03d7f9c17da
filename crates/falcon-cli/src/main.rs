//! `falcon`: the command-line interface to Falcon.
//!
//! This crate parses input into calls on EXP and analysis and renders their results (tables, JSON). It never
//! reaches storage or clusters itself; the layering test keeps it that way.
//!
//! # In detail
//!
//! - **Owns:** the `falcon` binary: clap, terminal tables, `--json` (the contract in docs/guide/json-contract.md),
//!   exit codes, reading `falcon.toml` and the environment; each command module parses, calls one `falcon-app` method
//!   and renders
//! - **Must not:** depend on `falcon-exp`, `falcon-analysis` or anything below them
//! - **Invariants:** JSON on stdout (one object, or JSON Lines for streams), logs on stderr (colour only on a
//!   terminal); errors in `--json` mode are `{"error": {...}}`

mod cli;
mod commands;
mod output;
mod settings;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    let cli = match cli::Cli::try_parse_from(&argv) {
        Ok(cli) => cli,
        Err(e) => return output::clap_error(e, argv.iter().any(|a| a == "--json")),
    };
    init_tracing(cli.global.verbose);
    let json = cli.global.json;
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return output::report_error(&anyhow::Error::new(e).context("starting the async runtime"), json),
    };
    let result = runtime.block_on(commands::run(cli));
    // A blocking task still running now was abandoned by its command; waiting for it could hang the exit (`falcon
    // mcp` stopped by a signal leaves a read of stdin that returns only when the client closes its end).
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    match result {
        Ok(code) => code,
        Err(e) => output::report_error(&e, json),
    }
}

/// Logs go to stderr: warnings by default, more with `-v`, or as `FALCON_LOG` / `RUST_LOG` say.
fn init_tracing(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info,sqlx=warn",
        2 => "debug,sqlx=info",
        _ => "trace",
    };
    let filter =
        std::env::var("FALCON_LOG").or_else(|_| std::env::var("RUST_LOG")).unwrap_or_else(|_| default.to_string());
    // Colour only for a person at a terminal: never in redirected logs, never with NO_COLOR set (no-color.org).
    use std::io::IsTerminal;
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_writer(std::io::stderr)
        .with_ansi(colour)
        .with_target(false)
        .init();
}
