//! The JSON contract every front end speaks (docs/guide/json-contract.md), in one place: the error envelope
//! `{"error": {"code", "message", "hint"}}` the CLI's `--json`, the HTTP API and MCP all return, the bodies that
//! exist only on the wire (`DiffBody`, `StoredAnalysis`), and how a type's JSON Schema is written for the OpenAPI document and the
//! MCP tool list. The views of EXP's values are here too, each built by `From` (the storage rows and EXP's results
//! carry no serialization): an experiment, its record, audit log and artifacts (`experiment`), goals and their
//! comparison (`goals`), a session (`sessions`), a history (`history`), a run-level comparison (`runs`), the setup
//! checks (`setup`), metric and analysis summaries (`summaries`), a config diff (`diff`). The committed snapshots in
//! `contract/` pin them (`crates/falcon-cli/tests/it/contract.rs`); `xtask/tests/it/contract_types.rs` fails on a
//! wire schema below this edge.

mod bisect;
mod diff;
mod experiment;
mod goals;
mod history;
mod runs;
mod sessions;
mod setup;
mod summaries;

pub use bisect::{BisectCommit, BisectTested, BisectView};
pub use diff::{changes, serialize_changes, Change, ChangeKind, Group, NwayRow};
pub use experiment::{
    ArtifactView, CodeSnapshotView, CodeView, ExperimentRecordView, ExperimentView, Note, SkippedOutput, TransitionView,
};
pub use goals::{GoalComparison, GoalProgress, GoalRecordView, GoalRow, GoalView};
pub use history::{History, HistoryChange, HistoryPoint};
pub use runs::{ConfigNoise, RunComparison, RunRow, Sides};
pub use sessions::{SessionDetailView, SessionExperimentView, SessionRow};
pub use setup::{CalibrationReport, Check, Connection, DbBackend, DoctorReport, PoolCalibration};
pub use summaries::{metric_summaries, AnalysisSummary, MetricSummaries, MetricSummary};

use crate::AppError;
use falcon_core::ErrorKind;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{json, Value};

/// The error body every failure has.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

/// What went wrong.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ErrorDetail {
    /// `usage`, `not_found`, `conflict`, `invalid`, `failure`, or the API's own: `unauthorized`, `forbidden`,
    /// `payload_too_large`, `unsupported_media_type`, `too_many_requests`, `range_not_satisfiable`.
    pub code: String,
    pub message: String,
    pub hint: Option<String>,
}

impl ErrorBody {
    pub fn new(code: &str, message: impl Into<String>, hint: Option<String>) -> Self {
        ErrorBody { error: ErrorDetail { code: code.to_string(), message: message.into(), hint } }
    }

    /// The body of an application error: its kind's code, its message and hint.
    pub fn of(e: &AppError) -> Self {
        Self::new(e.kind().code(), e.to_string(), e.hint())
    }

    /// The body of a kind with a message (the CLI's own errors: usage, a file it could not write).
    pub fn of_kind(kind: ErrorKind, message: impl Into<String>, hint: Option<String>) -> Self {
        Self::new(kind.code(), message, hint)
    }

    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or_else(|_| json!({ "error": { "code": "failure" } }))
    }
}

/// `GET …/diff/{b}`.
#[derive(Serialize, JsonSchema)]
pub struct DiffBody {
    /// Every path that differs, A → B; `group` says configuration or bookkeeping.
    pub changes: Vec<Change>,
}

/// `GET /api/v1/profiles/{exp}` without `tool`: what is stored.
#[derive(Serialize, JsonSchema)]
pub struct StoredAnalysis {
    pub experiment: falcon_core::ids::ExperimentId,
    /// The analysis summary rows (profile, trace, kernel_bench, accuracy).
    pub analysis: Vec<AnalysisSummary>,
    /// The memory verdict, `null` until analysed.
    pub memory: Option<falcon_analysis::leak::MemoryVerdict>,
}

/// Every `"type": "number"` (alone or in a list) of a JSON Schema also allows `null`: a non-finite float is
/// written as `null`.
pub fn nullable_numbers(value: &mut Value) {
    match value {
        Value::Object(map) => {
            match map.get_mut("type") {
                Some(Value::String(t)) if t == "number" => {
                    map.insert("type".into(), json!(["number", "null"]));
                }
                Some(Value::Array(types)) if types.contains(&json!("number")) && !types.contains(&json!("null")) => {
                    types.push(json!("null"));
                }
                _ => {}
            }
            for v in map.values_mut() {
                nullable_numbers(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(nullable_numbers),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_envelope_has_code_message_and_hint() {
        let e = AppError::new(ErrorKind::NotFound, "no experiment e-9");
        assert_eq!(
            ErrorBody::of(&e).to_value(),
            json!({ "error": { "code": "not_found", "message": "no experiment e-9", "hint": null } })
        );
    }

    #[test]
    fn numbers_may_be_null() {
        let mut v = json!({"properties": {"a": {"type": "number"}, "b": {"type": ["number", "string"]}}});
        nullable_numbers(&mut v);
        assert_eq!(
            v,
            json!({"properties": {"a": {"type": ["number", "null"]}, "b": {"type": ["number", "string", "null"]}}})
        );
    }
}
