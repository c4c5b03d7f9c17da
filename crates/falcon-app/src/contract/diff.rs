//! A configuration diff on the wire: `exp diff`'s and the API's `changes`, a profile comparison's and the goal
//! report's `config_diff`, a session's `differences` — built from EXP's diff (`falcon_exp::diff`), whose rules decide
//! the paths, kinds and groups. The enums here mirror EXP's variant for variant (the `From`s are exhaustive, so a
//! new variant there does not compile until it is named here).

use falcon_exp::diff as exp;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

/// How a path changed between `a` and `b`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    /// Only in `b`.
    Added,
    /// Only in `a`.
    Removed,
    /// In both, with different values.
    Changed,
}

impl From<exp::ChangeKind> for ChangeKind {
    fn from(k: exp::ChangeKind) -> Self {
        match k {
            exp::ChangeKind::Added => ChangeKind::Added,
            exp::ChangeKind::Removed => ChangeKind::Removed,
            exp::ChangeKind::Changed => ChangeKind::Changed,
        }
    }
}

/// What part of an experiment a path belongs to (see the module docs for the mapping).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Group {
    /// The model and its architecture.
    Model,
    /// Parallelism and sharding.
    Parallelism,
    /// Rematerialisation (activation checkpointing).
    Remat,
    /// Batch sizes, micro-batches and sequence length.
    BatchSequence,
    /// Numeric precision and dtypes.
    Precision,
    /// Accelerator, slices, zones, capacity.
    Resources,
    /// The workload's environment variables.
    Env,
    /// The code it ran: commit, branch, repository, uncommitted changes.
    Code,
    /// Everything else.
    Other,
    /// What an experiment is called and what it is for (name, goal, session, baseline, Falcon's labels), not
    /// what it runs.
    Bookkeeping,
}

impl From<exp::Group> for Group {
    fn from(g: exp::Group) -> Self {
        match g {
            exp::Group::Model => Group::Model,
            exp::Group::Parallelism => Group::Parallelism,
            exp::Group::Remat => Group::Remat,
            exp::Group::BatchSequence => Group::BatchSequence,
            exp::Group::Precision => Group::Precision,
            exp::Group::Resources => Group::Resources,
            exp::Group::Env => Group::Env,
            exp::Group::Code => Group::Code,
            exp::Group::Other => Group::Other,
            exp::Group::Bookkeeping => Group::Bookkeeping,
        }
    }
}

/// One difference between two values.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Change {
    /// Dotted path (`config.parallelism.fsdp`, `workload.command.3`).
    pub path: String,
    /// Added, removed or changed.
    pub kind: ChangeKind,
    /// The value in `a` (absent when added).
    pub a: Option<Value>,
    /// The value in `b` (absent when removed).
    pub b: Option<Value>,
    /// What the path belongs to.
    pub group: Group,
}

impl From<&exp::Change> for Change {
    fn from(c: &exp::Change) -> Self {
        Change { path: c.path.clone(), kind: c.kind.into(), a: c.a.clone(), b: c.b.clone(), group: c.group.into() }
    }
}

/// EXP's changes on the wire, in their order.
pub fn changes(changes: &[exp::Change]) -> Vec<Change> {
    changes.iter().map(Change::from).collect()
}

/// One row of an N-way comparison: a path whose values are not all equal.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct NwayRow {
    /// Dotted path.
    pub path: String,
    /// What the path belongs to.
    pub group: Group,
    /// The value in each input, in input order (`None` where the path is absent).
    pub values: Vec<Option<Value>>,
}

impl From<&exp::NwayRow> for NwayRow {
    fn from(r: &exp::NwayRow) -> Self {
        NwayRow { path: r.path.clone(), group: r.group.into(), values: r.values.clone() }
    }
}

/// Writes EXP's changes as their wire view (for a use case's struct that keeps EXP's: `#[serde(serialize_with)]`
/// beside `#[schemars(with = "Vec<Change>")]`).
pub fn serialize_changes<S: serde::Serializer>(list: &[exp::Change], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(list.iter().map(Change::from))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The wire names are EXP's: each group serializes as `Group::as_str` says.
    #[test]
    fn every_group_is_written_by_its_exp_name() {
        for g in exp::Group::ALL {
            assert_eq!(serde_json::to_value(Group::from(g)).unwrap(), json!(g.as_str()));
        }
    }

    /// A change on the wire, from EXP's diff of two configs.
    #[test]
    fn a_change_is_written_with_its_kind_and_group() {
        let changes =
            exp::diff(&json!({"parallelism": {"fsdp": 8}}), &json!({"parallelism": {"fsdp": 16}, "dtype": "bf16"}));
        assert_eq!(
            serde_json::to_value(super::changes(&changes)).unwrap(),
            json!([
                {"path": "dtype", "kind": "added", "a": null, "b": "bf16", "group": "precision"},
                {"path": "parallelism.fsdp", "kind": "changed", "a": 8, "b": 16, "group": "parallelism"}
            ])
        );
    }
}
