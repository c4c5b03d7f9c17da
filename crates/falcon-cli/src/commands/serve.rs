//! `falcon serve`: the Web API and the worker loop ([`falcon_api::serve`]) until SIGTERM or SIGINT; exit 0 after
//! a clean stop.

use crate::cli::{GlobalArgs, ServeArgs};
use falcon_api::ServeOptions;
use std::process::ExitCode;
use std::sync::Arc;

pub async fn run(global: &GlobalArgs, args: &ServeArgs) -> anyhow::Result<ExitCode> {
    let app = Arc::new(crate::settings::app(global));
    app.config()?;
    let options = ServeOptions {
        bind: args.bind,
        worker: !args.no_worker,
        max_analyses: args.max_analyses.max(1),
        allowed_hosts: args.allowed_hosts.clone(),
        limits: falcon_api::connections::Limits {
            max_connections: args.max_connections as usize,
            max_per_client: args.max_connections_per_client as usize,
            max_per_local_client: args.max_connections_per_local_client as usize,
            max_streams_per_client: args.max_streams_per_client as usize,
            ..Default::default()
        },
    };
    let worker = options.worker;
    let stop = async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending::<()>().await } } => {}
        }
        eprintln!("falcon serve: stopping (requests in flight finish; everything ends within 10 s)");
    };
    falcon_api::serve(app.clone(), options, stop, |addr, tokens| {
        eprintln!(
            "falcon serve: listening on http://{addr} — API /api/v1, OpenAPI /api/v1/openapi.json; worker {}; {}",
            if worker { "on" } else { "off" },
            if tokens { "tokens required" } else { "open (loopback, no token ever made)" }
        );
    })
    .await?;
    app.close().await;
    eprintln!("falcon serve: stopped");
    Ok(ExitCode::SUCCESS)
}
