//! The one error type of the application layer: what EXP, analysis or spec parsing reported, or a failure
//! the layer raises itself (a file it could not read, an input it refuses), each with its [`ErrorKind`] (and
//! so its exit code / HTTP status) and a hint for the user.

use falcon_core::ErrorKind;

/// A use case's failure.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// From EXP (stores, jobs, lifecycle).
    #[error(transparent)]
    Exp(#[from] falcon_exp::ExpError),
    /// From analysis (inputs, decoding, the analysis service).
    #[error(transparent)]
    Analysis(#[from] falcon_analysis::error::AnalysisError),
    /// An experiment spec that does not parse or validate.
    #[error(transparent)]
    Spec(#[from] falcon_core::spec::SpecError),
    /// Raised here: a file that cannot be read, an input that is refused, …
    #[error("{message}")]
    Failure {
        /// What kind of failure (exit code, HTTP status).
        kind: ErrorKind,
        /// What happened, naming the input.
        message: String,
        /// What to do about it.
        hint: Option<String>,
    },
}

impl AppError {
    /// A failure of `kind` raised by the application layer.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        AppError::Failure { kind, message: message.into(), hint: None }
    }

    /// The same failure with a hint.
    pub fn with_hint(self, hint: impl Into<String>) -> Self {
        match self {
            AppError::Failure { kind, message, .. } => AppError::Failure { kind, message, hint: Some(hint.into()) },
            other => other,
        }
    }

    /// An analysis error with the hint of the command that read the input (the analysis module's own hints
    /// speak of profiles): the hint replaces the analysis one where that one is about the input.
    pub fn with_input_hint(e: falcon_analysis::error::AnalysisError, hint: &str) -> Self {
        let input_hint = e.hint().map(|_| hint.to_string());
        AppError::Failure { kind: e.kind(), message: e.to_string(), hint: input_hint }
    }

    /// A usage error (bad argument value).
    pub fn usage(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Usage, message)
    }

    /// The kind, which fixes the exit code and HTTP status.
    pub fn kind(&self) -> ErrorKind {
        match self {
            AppError::Exp(e) => e.kind(),
            AppError::Analysis(e) => e.kind(),
            AppError::Spec(e) => e.kind(),
            AppError::Failure { kind, .. } => *kind,
        }
    }

    /// What the user can do about it.
    pub fn hint(&self) -> Option<String> {
        match self {
            AppError::Exp(e) => e.hint(),
            AppError::Analysis(e) => e.hint(),
            AppError::Spec(e) => e.hint.clone(),
            AppError::Failure { hint, .. } => hint.clone(),
        }
    }
}

/// A use case's result.
pub type Result<T, E = AppError> = std::result::Result<T, E>;
