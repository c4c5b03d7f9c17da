//! Setup use cases: `doctor` (every configured component checked, with what is wrong) and the connection
//! facts `init` reports after creating the stores.

use crate::{ctx::Ctx, Result};

pub use crate::contract::{CalibrationReport, Check, Connection, DoctorReport, PoolCalibration};

pub(crate) async fn doctor(cx: &Ctx) -> Result<DoctorReport> {
    let mut report: DoctorReport = falcon_exp::doctor(cx.config()?).await.into();
    // The pools' measured peaks, once the database answers: never a failure (a pool without one analyses XLA:CPU
    // captures without a roofline, and says so).
    if report.checks.iter().any(|c| c.component == "database" && c.ok) {
        let started = std::time::Instant::now();
        if let Ok(kept) = async { cx.exp().await?.calibrations().await.map_err(crate::AppError::from) }.await {
            let config = cx.config()?;
            let detail = config
                .pools
                .iter()
                .map(|p| match kept.iter().find(|c| c.pool == p.name) {
                    Some(c) => format!(
                        "{}: {} TFLOP/s f32 matmul, {} GB/s memory on {} core(s), measured on {} at {}",
                        p.name,
                        crate::render::numbers::num(c.matmul_tflops),
                        crate::render::numbers::num(c.memory_gb_per_s),
                        c.cores,
                        c.host,
                        falcon_core::time::Millis(c.measured_ms).to_rfc3339()
                    ),
                    None => format!("{}: not measured (`falcon doctor --calibrate`)", p.name),
                })
                .collect::<Vec<_>>()
                .join("; ");
            report.checks.push(Check {
                component: "calibration".into(),
                target: "pools".into(),
                ok: true,
                detail,
                hint: None,
                elapsed_ms: started.elapsed().as_millis() as u64,
            });
        }
    }
    Ok(report)
}

/// Measures this machine's peaks and keeps them for `pools` (none: every pool whose backend is local, the pools
/// whose jobs run on this machine).
pub(crate) async fn calibrate(cx: &Ctx, pools: &[String]) -> Result<CalibrationReport> {
    let pools: Vec<String> = if pools.is_empty() {
        let local: Vec<String> = cx
            .config()?
            .pools
            .iter()
            .filter(|p| p.backend == falcon_core::config::PoolBackend::Local)
            .map(|p| p.name.clone())
            .collect();
        if local.is_empty() {
            return Err(crate::AppError::usage(
                "no local pool to calibrate: name the pool whose node this is with --pool NAME",
            ));
        }
        local
    } else {
        pools.to_vec()
    };
    let (m, kept) = cx.exp().await?.calibrate(&pools).await?;
    Ok(CalibrationReport::of(m, &kept))
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
