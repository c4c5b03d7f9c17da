//! `falcon bisect`: EXP's bisection (`falcon_exp::bisect`) started from a request, looked at, and — with
//! `--wait` — carried to its answer here, the jobs run by the embedded worker as `exp submit --wait` runs them.

use crate::contract::BisectView;
use crate::ctx::Ctx;
use crate::error::{AppError, Result};
use crate::requests::BisectStartRequest;
use falcon_core::ids::SessionId;
use falcon_core::ErrorKind;

/// How long `--wait` sleeps between steps when nothing moved.
const POLL: std::time::Duration = std::time::Duration::from_millis(500);

pub(crate) async fn start(cx: &Ctx, request: &BisectStartRequest) -> Result<BisectView> {
    request.check()?;
    let spec = falcon_core::spec::parse_spec(&request.spec, "spec")?;
    let exp = cx.exp().await?;
    let outcome = exp
        .start_bisect(
            &falcon_exp::bisect::BisectRequest {
                spec,
                repo: request.repo.clone(),
                good: request.good.clone(),
                bad: request.bad.clone(),
                metric: request.metric.clone(),
                direction: request.direction,
                min_runs: request.min_runs as usize,
                max_runs: request.max_runs as usize,
                probes: request.probes.map(|p| p as usize),
                name: request.name.clone(),
            },
            &cx.origin(),
        )
        .await?;
    Ok(BisectView::from(&outcome))
}

pub(crate) async fn show(cx: &Ctx, id: SessionId) -> Result<BisectView> {
    Ok(BisectView::from(&cx.exp().await?.bisect(id).await?))
}

pub(crate) async fn advance(cx: &Ctx, id: SessionId) -> Result<BisectView> {
    Ok(BisectView::from(&cx.exp().await?.advance_bisect(id).await?))
}

/// Carries a bisection to its answer: worker passes (jobs placed, experiments reconciled), then a step of the
/// search, until it is decided or `timeout` passes (the search is left as it is, the worker carries it on).
/// `progress` hears of each step whose runs changed.
pub(crate) async fn wait(
    cx: &Ctx,
    id: SessionId,
    timeout: Option<std::time::Duration>,
    mut progress: impl FnMut(&BisectView),
) -> Result<BisectView> {
    let exp = cx.exp().await?;
    let deadline = timeout.map(|t| std::time::Instant::now() + t);
    let background = exp.start_background().await?;
    let result = async {
        let mut last: Option<(usize, String)> = None;
        loop {
            let (tick, _) = exp.work().await?;
            for e in tick.errors {
                tracing::warn!("{e}");
            }
            let view = BisectView::from(&exp.advance_bisect(id).await?);
            let seen = (view.runs, view.tested.iter().map(|t| t.verdict.as_str()).collect::<Vec<_>>().join(","));
            if last.as_ref() != Some(&seen) {
                progress(&view);
                last = Some(seen);
            }
            if view.state == "decided" {
                return Ok(view);
            }
            if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
                return Err(AppError::new(
                    ErrorKind::Failure,
                    format!(
                        "bisection {id} is still searching at the --timeout ({}); it carries on with `falcon worker` \
                         (`falcon bisect --session {id}` shows it)",
                        view.message
                    ),
                ));
            }
            tokio::time::sleep(POLL).await;
        }
    }
    .await;
    let stopped = exp.stop_background(background).await;
    let view = result?;
    stopped?;
    Ok(view)
}
