//! Accuracy use cases: align two runs' metric series (MaxText, Megatron-LM, TensorBoard, JSONL/CSV, or an
//! experiment's metrics artifacts) and compare them with tolerances (A is the reference); compare two tensor
//! dumps tensor by tensor.

use crate::{ctx::Ctx, AppError, Result};
use falcon_analysis::accuracy::align::align;
use falcon_analysis::accuracy::read::{read_path, ReadOptions};
use falcon_analysis::error::AnalysisError;
use falcon_core::ErrorKind;
use std::path::{Path, PathBuf};

pub use crate::requests::AccuracyRequest;
pub use falcon_analysis::accuracy::align::{AccuracyReport, AlignOptions, Verdict};
pub use falcon_analysis::tensors::{TensorOptions, TensorReport};

const INPUT_HINT: &str =
    "give a metrics file (MaxText metrics JSONL or console log, Megatron-LM log or golden-values JSON, \
     TensorBoard event file or directory, JSONL, CSV) or an experiment id (e-N)";

impl AccuracyRequest {
    /// The alignment options; usage errors for bad tolerances and `--map` entries.
    pub fn options(&self) -> Result<AlignOptions> {
        crate::requests::checked(self)?;
        for (flag, v) in [("rtol", self.rtol), ("atol", self.atol)] {
            if let Some(v) = v {
                if !(v.is_finite() && v >= 0.0) {
                    return Err(AppError::usage(format!("{flag} must be a finite number ≥ 0, not {v}")));
                }
            }
        }
        let mut map = Vec::with_capacity(self.map.len());
        for entry in &self.map {
            match entry.split_once('=') {
                Some((x, y)) if !x.trim().is_empty() && !y.trim().is_empty() => {
                    map.push((x.trim().to_string(), y.trim().to_string()))
                }
                _ => {
                    return Err(AppError::usage(format!("map {entry:?}: expected A_NAME=B_NAME"))
                        .with_hint("e.g. --map 'learning/lm_loss=lm loss'"))
                }
            }
        }
        Ok(AlignOptions { metrics: self.metrics.clone(), rtol: self.rtol, atol: self.atol, map, b_step_offset: None })
    }
}

pub(crate) async fn compare_accuracy(cx: &Ctx, req: &AccuracyRequest) -> Result<AccuracyReport> {
    let options = req.options()?;
    let (a, b) = accuracy_inputs(cx, req).await?;
    let read_opts = ReadOptions { step_column: req.step_column.clone() };
    let report = tokio::task::spawn_blocking(move || -> Result<AccuracyReport> {
        let read = |p: &Path| read_path(p, &read_opts).map_err(|e| AppError::with_input_hint(e, INPUT_HINT));
        let (ra, rb) = (read(&a)?, read(&b)?);
        Ok(align(&ra, &rb, &options)?)
    })
    .await
    .map_err(|e| AppError::new(ErrorKind::Failure, format!("accuracy task failed: {e}")))??;
    Ok(report)
}

/// The local paths of A and B: as given when both exist, else an experiment's metrics artifacts (the
/// stores are opened only then).
async fn accuracy_inputs(cx: &Ctx, req: &AccuracyRequest) -> Result<(PathBuf, PathBuf)> {
    crate::files::check_input(Path::new(&req.a))?;
    crate::files::check_input(Path::new(&req.b))?;
    if Path::new(&req.a).exists() && Path::new(&req.b).exists() {
        return Ok((PathBuf::from(&req.a), PathBuf::from(&req.b)));
    }
    let analysis = cx.analysis().await?;
    let resolved = async {
        let a = analysis.accuracy_inputs(&req.a).await?;
        let b = analysis.accuracy_inputs(&req.b).await?;
        Ok::<_, AnalysisError>((a, b))
    }
    .await;
    resolved.map_err(|e| match e {
        AnalysisError::NotFound(msg) => AppError::new(ErrorKind::NotFound, msg).with_hint(INPUT_HINT),
        other => AppError::from(other),
    })
}

pub(crate) async fn compare_tensors(cx: &Ctx, a: &Path, b: &Path, options: &TensorOptions) -> Result<TensorReport> {
    crate::files::check_input(a)?;
    crate::files::check_input(b)?;
    let mut options = options.clone();
    if options.max_decompressed_bytes == Some(0) {
        return Err(AppError::usage(format!("{} must be at least 1 (MiB)", falcon_analysis::limits::FLAG)));
    }
    // The configured cap when the caller set none; local dumps need no configuration, so a configuration
    // that does not load leaves the built-in default.
    if options.max_decompressed_bytes.is_none() {
        options.max_decompressed_bytes = cx.config().ok().map(falcon_analysis::limits::max_decompressed_bytes);
    }
    let (a, b) = (a.to_path_buf(), b.to_path_buf());
    tokio::task::spawn_blocking(move || falcon_analysis::tensors::compare_dumps(&a, &b, &options))
        .await
        .map_err(|e| AppError::new(ErrorKind::Failure, format!("tensor comparison task failed: {e}")))?
        .map_err(tensor_failure)
}

/// The analysis error with a hint for tensor dumps (the analysis module's hints speak of profiles).
fn tensor_failure(e: AnalysisError) -> AppError {
    let message = e.to_string();
    match e {
        AnalysisError::NotFound(_) => AppError::new(ErrorKind::NotFound, message)
            .with_hint("give a .npy file, a .npz archive, a .safetensors file or a directory of .npy files (and an existing --map file)"),
        AnalysisError::DecompressedTooLarge { .. } => AppError::from(e),
        AnalysisError::Invalid(_) => AppError::new(ErrorKind::Failure, message)
            .with_hint("dumps are read as np.save / np.savez / safetensors write them; re-save the tensor (e.g. as float32) if its dtype is not supported"),
        other => AppError::new(other.kind(), message),
    }
}

/// Why an accuracy verdict is `fail`, in a line.
pub fn mismatch_reason(r: &AccuracyReport) -> String {
    let mut why = Vec::new();
    for m in &r.metrics {
        match m.verdict {
            Verdict::Fail => {
                let mut s = format!(
                    "{} fails at {} of {} steps (rtol {}, atol {})",
                    m.name, m.failing_steps, m.steps_compared, m.rtol, m.atol
                );
                if let Some(step) = m.first_divergence_step {
                    s.push_str(&format!(", diverging from step {step}"));
                }
                why.push(s);
            }
            Verdict::NoOverlap if m.requested => why.push(format!("{}: no step in common", m.name)),
            _ => {}
        }
    }
    if why.is_empty() {
        why.push("nothing was compared".to_string());
    }
    why.join("; ")
}

/// Why a tensor report counts as a mismatch, in one line.
pub fn tensor_mismatch_reason(r: &TensorReport) -> String {
    let mut why = Vec::new();
    if r.failed > 0 {
        let worst: Vec<&str> = r.tensors.iter().filter(|t| !t.allclose).take(3).map(|t| t.name.as_str()).collect();
        why.push(format!(
            "{} of {} tensors fail allclose ({}{})",
            r.failed,
            r.tensors.len(),
            worst.join(", "),
            if r.failed > 3 { ", …" } else { "" }
        ));
    }
    if !r.shape_mismatches.is_empty() {
        why.push(format!(
            "{} shape mismatch{}",
            r.shape_mismatches.len(),
            if r.shape_mismatches.len() == 1 { "" } else { "es" }
        ));
    }
    if r.tensors.is_empty() && r.shape_mismatches.is_empty() {
        why.push("no tensor names in common (pass --map)".to_string());
    }
    why.join("; ")
}
