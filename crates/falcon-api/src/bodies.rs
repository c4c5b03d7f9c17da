//! The JSON request bodies, one type each: the handlers parse them and the OpenAPI document derives their
//! schemas from the same types, with the rules a schema can carry (id patterns, enums, ranges, unknown fields
//! refused). Integers are JSON numbers with no fraction: `3` and `3.0` are the same count.

use crate::error::{ApiError, ApiResult};
use axum::http::StatusCode;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};

/// A field that breaks its schema's rule: 422 naming the field.
fn invalid(field: &str, why: &str) -> ApiError {
    ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid", format!("the body: `{field}` {why}"))
}

/// `Some` text must not be blank.
fn not_blank(field: &str, value: Option<&str>) -> ApiResult<()> {
    match value {
        Some(v) if v.trim().is_empty() => Err(invalid(field, "must not be blank")),
        _ => Ok(()),
    }
}

/// `Some` text must be `{prefix}N`.
fn id_like(field: &str, value: Option<&str>, prefix: &str) -> ApiResult<()> {
    match value {
        Some(v) if !is_id(v, prefix) => Err(invalid(field, &format!("must be an id {prefix}N, not `{v}`"))),
        _ => Ok(()),
    }
}

/// `{prefix}` and 1 to 18 digits.
pub fn is_id(text: &str, prefix: &str) -> bool {
    // Canonical: no leading zero (`e-01` names e-1 by another spelling).
    text.strip_prefix(prefix)
        .is_some_and(|d| (1..=18).contains(&d.len()) && d.bytes().all(|b| b.is_ascii_digit()) && !d.starts_with('0'))
}

/// `Some` number must lie in `range`.
fn within<T: PartialOrd + std::fmt::Display>(field: &str, value: Option<T>, lo: T, hi: T) -> ApiResult<()> {
    match value {
        Some(v) if v < lo || v > hi => Err(invalid(field, &format!("must be from {lo} to {hi}, not {v}"))),
        _ => Ok(()),
    }
}

/// The JSON body of `POST /api/v1/sessions` (a YAML body is the sweep itself).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionBody {
    /// The sweep: its YAML/JSON text or the object (`base` inline or `base: e-N`, `sweep`, `name_template`,
    /// `repeats`).
    #[schemars(extend("type" = ["string", "object"]))]
    pub sweep: serde_json::Value,
    /// The session's name (default `session`).
    #[schemars(regex(pattern = r"\S"))]
    pub name: Option<String>,
    /// The goal its experiments serve (`g-N`).
    #[schemars(regex(pattern = r"^g-[1-9][0-9]{0,17}$"))]
    pub goal: Option<String>,
    /// Runs per point, 1 to 100.
    #[serde(default, deserialize_with = "whole_opt_u64")]
    #[schemars(range(min = 1, max = 100))]
    pub repeats: Option<u64>,
}

impl SessionBody {
    /// The rules of its schema.
    pub fn check(&self) -> ApiResult<()> {
        if !(self.sweep.is_string() || self.sweep.is_object()) {
            return Err(invalid("sweep", "must be the sweep's text or object"));
        }
        not_blank("name", self.name.as_deref())?;
        id_like("goal", self.goal.as_deref(), "g-")?;
        within("repeats", self.repeats, 1, 100)
    }
}

/// A whole number written as a JSON integer or as a float with no fraction.
fn whole<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let n = Option::<serde_json::Number>::deserialize(d)?;
    match n {
        None => Ok(None),
        Some(n) => match n.as_f64() {
            Some(x) if x.fract() == 0.0 => Ok(Some(x)),
            _ => Err(serde::de::Error::custom(format!("{n} is not a whole number"))),
        },
    }
}

fn whole_opt_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    match whole(d)? {
        None => Ok(None),
        Some(x) if (0.0..=9.0e15).contains(&x) => Ok(Some(x as u64)),
        Some(x) => Err(serde::de::Error::custom(format!("{x} is not a count"))),
    }
}

/// A string, with `null` read as empty.
#[cfg(test)]
mod tests {
    #[test]
    fn counts_may_be_written_as_whole_floats_and_unknown_fields_are_refused() {
        use falcon_app::requests::{GoalClaimRequest, GoalCloseRequest, GoalCreateRequest};
        let b: GoalClaimRequest = serde_json::from_str(r#"{"lease_s": 60.0}"#).unwrap();
        assert_eq!(b.lease_s, 60);
        assert!(serde_json::from_str::<GoalClaimRequest>(r#"{"lease_s": 1.5}"#).is_err());
        assert!(serde_json::from_str::<GoalClaimRequest>(r#"{"lease_s": -1}"#).is_err());
        assert!(serde_json::from_str::<GoalClaimRequest>(r#"{"lease": 60}"#).is_err());
        let g: GoalCreateRequest = serde_json::from_str(r#"{"title": "t", "metric": "mfu", "priority": 2.0}"#).unwrap();
        assert_eq!(g.priority, 2);
        assert!(serde_json::from_str::<GoalCreateRequest>(r#"{"title": "t", "metric": "mfu", "x": 1}"#).is_err());
        assert!(
            serde_json::from_str::<GoalCreateRequest>(r#"{"title": "t", "metric": "mfu", "priority": 2.5}"#).is_err()
        );
        let c: GoalCloseRequest = serde_json::from_str(r#"{"id": "g-1", "reason": null}"#).unwrap();
        assert_eq!(c.reason, "");
    }
}
