//! `falcon mcp`: the MCP server over stdio ([`falcon_mcp::serve_stdio`]) until the client closes stdin, or SIGTERM
//! or SIGINT. stdout is the protocol's: this command prints nothing there, and its messages go to stderr.

use crate::cli::{GlobalArgs, McpArgs};
use falcon_mcp::McpOptions;
use std::process::ExitCode;
use std::sync::Arc;

pub async fn run(global: &GlobalArgs, args: &McpArgs) -> anyhow::Result<ExitCode> {
    let app = Arc::new(crate::settings::app(global));
    // Over stdio the client is the user's own agent on this machine: it submits as the CLI does.
    if let Ok(dir) = std::env::current_dir() {
        app.submit_from(dir);
    }
    // A bad configuration fails here, before a client is told the server is up.
    app.config()?;
    let stop = async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending::<()>().await } } => {}
        }
    };
    falcon_mcp::serve_stdio(app.clone(), McpOptions { read_only: args.read_only }, stop).await?;
    app.close().await;
    Ok(ExitCode::SUCCESS)
}
