//! Setup use cases: `doctor` (every configured component checked, with what is wrong) and the connection
//! facts `init` reports after creating the stores.

use crate::{App, Result};

pub use falcon_exp::{Check, Connection, DoctorReport};

impl App {
    /// Checks the database, the artifact store and the pools; each check says what is wrong (only a
    /// configuration that cannot be loaded fails).
    pub async fn doctor(&self) -> Result<DoctorReport> {
        Ok(falcon_exp::doctor(self.config()?).await)
    }

    /// Whether the stores answer: `doctor`'s database and artifact-store checks only (what `/readyz` asks).
    pub async fn readiness(&self) -> Result<DoctorReport> {
        let mut report = self.doctor().await?;
        report.checks.retain(|c| c.component == "database" || c.component == "artifacts");
        report.ok = report.checks.iter().all(|c| c.ok);
        Ok(report)
    }

    /// Connects (creating the database and artifact directory, applying migrations) and says what to.
    pub async fn connection(&self) -> Result<Connection> {
        Ok(self.exp_creating().await?.connection().await?)
    }
}
