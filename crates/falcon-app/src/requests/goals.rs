//! A goal's claim and its closing (release, achieve, abandon), declared once for the CLI, the API's bodies and
//! MCP's tools.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

use super::{checked, default_lease_s, default_top, MAX_LEASE_S, MAX_TOP};
use crate::error::Result;
use falcon_core::ids::{GoalId, SessionId};

/// A goal id as requests write it: `g-N`, no leading zero.
pub const GOAL_ID_PATTERN: &str = r"^g-[1-9][0-9]{0,17}$";

/// `goal claim`, `POST /api/v1/goals/claim`, MCP `goal_claim`: claim a goal (or the next open one) for an owner,
/// under a lease.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GoalClaimRequest {
    /// A goal (`g-N`); without it, the open goal of highest priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = GOAL_ID_PATTERN))]
    pub id: Option<String>,
    /// Who claims (an agent's or person's name). The CLI's default is `$USER`; the API's the token's own name
    /// (another owner needs an admin token); MCP needs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"\S"))]
    pub owner: Option<String>,
    /// How long the claim lasts unless renewed, in seconds (an expired lease releases it).
    #[serde(default = "default_lease_s", deserialize_with = "whole_u64")]
    #[schemars(range(min = 1, max = MAX_LEASE_S))]
    pub lease_s: u64,
}

impl GoalClaimRequest {
    /// The goal it names (`None`: the next open one) and the lease, checked against the type's schema.
    pub fn claim(&self) -> Result<(Option<GoalId>, std::time::Duration)> {
        checked(self)?;
        let id = self.id.as_deref().map(parse_goal_id).transpose()?;
        Ok((id, super::lease(self.lease_s)?))
    }
}

/// `goal release|achieve|abandon`, `POST /api/v1/goals/{id}/release|achieve|abandon`, MCP `goal_release`,
/// `goal_achieve`, `goal_abandon`: close a claimed goal, saying why.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GoalCloseRequest {
    /// The goal (`g-N`; in the API's path).
    #[schemars(regex(pattern = GOAL_ID_PATTERN))]
    pub id: String,
    /// Why (kept in the goal's history).
    #[serde(default, deserialize_with = "text_or_null")]
    #[schemars(with = "Option<String>")]
    pub reason: String,
    /// Who acts: the owner that holds the claim (the CLI's default is `$USER`; the API's the token's own name —
    /// an admin token acts for the holder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"\S"))]
    pub owner: Option<String>,
}

impl GoalCloseRequest {
    /// The goal it closes, the request checked against the type's schema.
    pub fn goal(&self) -> Result<GoalId> {
        checked(self)?;
        parse_goal_id(&self.id)
    }
}

/// Parses a goal id (`g-3` or `3`), a usage error otherwise.
pub fn parse_goal_id(text: &str) -> Result<GoalId> {
    text.parse().map_err(|e: falcon_core::ids::IdParseError| crate::error::AppError::usage(e.to_string()))
}

/// A goal id as the CLI and MCP take it: `g-N` or `N` (the API's paths and bodies take `g-N` only).
pub const GOAL_REF_PATTERN: &str = r"^(g-)?[1-9][0-9]{0,17}$";

/// MCP `goal_show`, `goal_compare` (the CLI's positional id): a goal by id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GoalRef {
    /// The goal (`g-3` or `3`).
    #[schemars(regex(pattern = GOAL_REF_PATTERN))]
    pub id: String,
}

impl GoalRef {
    /// The goal it names, the request checked against the type's schema.
    pub fn goal(&self) -> Result<GoalId> {
        checked(self)?;
        parse_goal_id(&self.id)
    }
}

/// `goal report`, `GET /api/v1/goals/{id}/report`, MCP `goal_report`: the goal's report — ranking, the best
/// experiment against the baseline, its profile comparison and config diff. (How it is written — JSON, Markdown,
/// HTML — is the surface's: the CLI's `--format`, the API's `format`.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GoalReportRequest {
    /// The goal (`g-3` or `3`; the API's path takes `g-3`).
    #[schemars(regex(pattern = GOAL_REF_PATTERN))]
    pub id: String,
    /// Rows per ranked table.
    #[serde(default = "default_top")]
    #[schemars(range(min = 1, max = MAX_TOP))]
    pub top: u32,
}

impl GoalReportRequest {
    /// The goal and the rows per ranked table, the request checked against the type's schema.
    pub fn report(&self) -> Result<(GoalId, usize)> {
        checked(self)?;
        Ok((parse_goal_id(&self.id)?, super::top(self.top)?))
    }
}

/// A session id as the CLI and MCP take it: `s-N` or `N` (the API's paths take `s-N` only).
pub const SESSION_REF_PATTERN: &str = r"^(s-)?[1-9][0-9]{0,17}$";

/// `session show`, `GET /api/v1/sessions/{id}`, MCP `session_show`: a sweep session — its experiments, their
/// metrics and the sweep as a grid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionShowRequest {
    /// The session (`s-2` or `2`; the API's path takes `s-2`).
    #[schemars(regex(pattern = SESSION_REF_PATTERN))]
    pub id: String,
    /// The sweep grid's metric (default: the goal's metric, else the first of `step_time_s`, `tokens_per_s`,
    /// `loss` the runs logged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = super::METRIC_PATTERN))]
    pub metric: Option<String>,
}

impl SessionShowRequest {
    /// The session it names, the request checked against the type's schema.
    pub fn session(&self) -> Result<SessionId> {
        checked(self)?;
        parse_session_id(&self.id)
    }
}

/// Parses a session id (`s-3` or `3`), a usage error otherwise.
pub fn parse_session_id(text: &str) -> Result<SessionId> {
    text.parse().map_err(|e: falcon_core::ids::IdParseError| crate::error::AppError::usage(e.to_string()))
}

/// A whole number written as a JSON integer or as a float with no fraction (`3` and `3.0` are the same count).
fn whole_u64<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<u64, D::Error> {
    let n = serde_json::Number::deserialize(d)?;
    if let Some(i) = n.as_u64() {
        return Ok(i);
    }
    match n.as_f64() {
        Some(x) if x.fract() == 0.0 && (0.0..=9.0e15).contains(&x) => Ok(x as u64),
        Some(x) if x.fract() == 0.0 => Err(serde::de::Error::custom(format!("{x} is out of range"))),
        _ => Err(serde::de::Error::custom(format!("{n} is not a whole number"))),
    }
}

/// Text, with `null` read as empty.
fn text_or_null<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<String, D::Error> {
    Ok(Option::<String>::deserialize(d)?.unwrap_or_default())
}
