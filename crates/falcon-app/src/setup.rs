//! Setup use cases: `doctor` (every configured component checked, with what is wrong) and the connection
//! facts `init` reports after creating the stores.

use crate::{App, Result};

pub use falcon_exp::{Check, Connection, DoctorReport};

pub(crate) async fn doctor(app: &App) -> Result<DoctorReport> {
    Ok(falcon_exp::doctor(app.config()?).await)
}

pub(crate) async fn readiness(app: &App) -> Result<DoctorReport> {
    let mut report = app.doctor().await?;
    report.checks.retain(|c| c.component == "database" || c.component == "artifacts");
    report.ok = report.checks.iter().all(|c| c.ok);
    Ok(report)
}

pub(crate) async fn connection(app: &App) -> Result<Connection> {
    Ok(app.exp_creating().await?.connection().await?)
}
