//! Setup use cases: `doctor` (every configured component checked, with what is wrong) and the connection
//! facts `init` reports after creating the stores.

use crate::{ctx::Ctx, Result};

pub use crate::contract::{Check, Connection, DoctorReport};

pub(crate) async fn doctor(cx: &Ctx) -> Result<DoctorReport> {
    Ok(falcon_exp::doctor(cx.config()?).await.into())
}

pub(crate) async fn readiness(cx: &Ctx) -> Result<DoctorReport> {
    let mut report = doctor(cx).await?;
    report.checks.retain(|c| c.component == "database" || c.component == "artifacts");
    report.ok = report.checks.iter().all(|c| c.ok);
    Ok(report)
}

pub(crate) async fn connection(cx: &Ctx) -> Result<Connection> {
    Ok(cx.exp_creating().await?.connection().await?.into())
}
