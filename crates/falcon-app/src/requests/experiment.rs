//! Requests that name experiments: one by id, two to diff, a page of one's artifacts.

use falcon_core::ids::ExperimentId;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{checked, default_page, default_top, page_size, EXPERIMENT_REF_PATTERN, MAX_PAGE, MAX_TOP};
use crate::error::{AppError, Result};

/// Parses an experiment id (`e-3` or `3`), a usage error otherwise.
fn experiment_id(text: &str) -> Result<ExperimentId> {
    text.parse().map_err(|e: falcon_core::ids::IdParseError| AppError::usage(e.to_string()))
}

/// MCP `exp_cancel` (the CLI's positional id): an experiment by id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExperimentRef {
    /// The experiment (`e-12` or `12`).
    #[schemars(regex(pattern = EXPERIMENT_REF_PATTERN))]
    pub id: String,
}

impl ExperimentRef {
    /// The experiment it names, the request checked against the type's schema.
    pub fn experiment(&self) -> Result<ExperimentId> {
        checked(self)?;
        experiment_id(&self.id)
    }
}

/// `exp diff`, `GET /api/v1/experiments/{a}/diff/{b}`, MCP `exp_diff`: the configuration changes from A to B.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExperimentDiffRequest {
    /// The first experiment (`e-1` or `1`; the API's path takes `e-1`).
    #[schemars(regex(pattern = EXPERIMENT_REF_PATTERN))]
    pub a: String,
    /// The second experiment, written the same way.
    #[schemars(regex(pattern = EXPERIMENT_REF_PATTERN))]
    pub b: String,
}

impl ExperimentDiffRequest {
    /// The two experiments, A first, the request checked against the type's schema.
    pub fn pair(&self) -> Result<(ExperimentId, ExperimentId)> {
        checked(self)?;
        Ok((experiment_id(&self.a)?, experiment_id(&self.b)?))
    }
}

/// `GET /api/v1/profiles/{a}/compare/{b}`: two experiments' profile comparison (their first hosts; A the baseline),
/// kept as A's report. (How it is written — JSON, Markdown, HTML — is the API's `format`; `profile compare` and MCP
/// `profile_compare` take files too: `ProfileCompareRequest`.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExperimentProfileCompareRequest {
    /// The baseline experiment (`e-1`).
    #[schemars(regex(pattern = EXPERIMENT_REF_PATTERN))]
    pub a: String,
    /// The candidate experiment (`e-2`).
    #[schemars(regex(pattern = EXPERIMENT_REF_PATTERN))]
    pub b: String,
    /// Rows per ranked table.
    #[serde(default = "default_top")]
    #[schemars(range(min = 1, max = MAX_TOP))]
    pub top: u32,
}

impl ExperimentProfileCompareRequest {
    /// The two experiments, A first, and the rows per ranked table, the request checked against the type's schema.
    pub fn report(&self) -> Result<(ExperimentId, ExperimentId, usize)> {
        checked(self)?;
        Ok((experiment_id(&self.a)?, experiment_id(&self.b)?, super::top(self.top)?))
    }
}

/// `exp artifacts`, `GET /api/v1/experiments/{id}/artifacts`, MCP `exp_artifacts`: a page of an experiment's
/// stored files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExperimentArtifactsRequest {
    /// The experiment (`e-12` or `12`; the API's path takes `e-12`).
    #[schemars(regex(pattern = EXPERIMENT_REF_PATTERN))]
    pub id: String,
    /// Rows per page (0: no rows).
    #[serde(default = "default_page")]
    #[schemars(range(max = MAX_PAGE))]
    pub limit: u32,
    /// Start at this page: the `next_cursor` of the previous one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^o[0-9]{1,18}$"))]
    pub cursor: Option<String>,
}

impl ExperimentArtifactsRequest {
    /// The experiment and the page size, the request checked against the type's schema.
    pub fn page(&self) -> Result<(ExperimentId, usize)> {
        checked(self)?;
        Ok((experiment_id(&self.id)?, page_size(self.limit)?))
    }
}
