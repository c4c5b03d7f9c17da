//! `falcon context`: what an agent needs before it acts, small enough to paste into a prompt — Falcon's
//! version, its stores (credentials removed), each pool with its load and the peaks of the accelerators it
//! offers, the open and claimed goals (highest priority first), running and recent experiments, the skills.
//! What cannot be read (a database that is down) is a note; the rest is still given. The Markdown rendering
//! stays within [`MARKDOWN_LIMIT`] bytes: longer lists are cut with a line saying how to see them whole.

use crate::{ctx::Ctx, Result};
use falcon_core::ids::{ExperimentId, GoalId};
use falcon_core::status::{ExperimentStatus, GoalStatus};
use falcon_core::time::Millis;
use falcon_exp::ExperimentFilter;
use serde::Serialize;

/// The most bytes of [`Context::markdown`].
pub const MARKDOWN_LIMIT: usize = 8 * 1024;
/// Goals, running and recent experiments given at most.
const MOST: usize = 10;

/// What `falcon context` gives.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Context {
    pub falcon: Version,
    pub stores: Stores,
    pub pools: Vec<PoolContext>,
    /// Experiments waiting for a place to run (PROVISIONING).
    pub queued_experiments: Option<u64>,
    /// Open and claimed goals, highest priority first (at most 10).
    pub goals: Vec<GoalContext>,
    pub experiments: Experiments,
    pub skills: Vec<SkillLine>,
    /// What could not be read.
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Version {
    pub name: &'static str,
    pub version: &'static str,
}

/// Where Falcon keeps its state (passwords and secret keys removed).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Stores {
    pub data_dir: String,
    pub db: String,
    pub artifacts: String,
}

/// A pool, its load now, and its accelerators' peaks.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct PoolContext {
    pub name: String,
    pub backend: String,
    pub zone: String,
    pub platform: String,
    pub accelerators: Vec<String>,
    /// Chips (or CPUs).
    pub capacity: u32,
    /// Chips held by its jobs; `null` when the store could not be read.
    pub used: Option<u32>,
    pub running: Option<u32>,
    /// Jobs submitted to it that do not run yet.
    pub waiting: Option<u32>,
    pub peaks: Vec<Peak>,
}

/// The peaks of one accelerator type, per chip (dense bf16, never the sparse figure).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Peak {
    pub accelerator: String,
    pub chip: &'static str,
    pub chips: u32,
    pub peak_bf16_tflops: Option<f64>,
    pub hbm_gbps: Option<f64>,
    pub hbm_bytes: Option<u64>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct GoalContext {
    pub id: GoalId,
    pub title: String,
    pub metric: String,
    pub direction: String,
    pub target: Option<f64>,
    pub baseline: Option<ExperimentId>,
    pub priority: i64,
    pub status: GoalStatus,
    pub owner: Option<String>,
    #[schemars(with = "Option<String>")]
    #[serde(serialize_with = "falcon_core::time::rfc3339_opt")]
    pub lease_expires_iso: Option<Millis>,
}

#[derive(Debug, Clone, Serialize, Default, schemars::JsonSchema)]
pub struct Experiments {
    /// Running or waiting to run (at most 10, newest first).
    pub active: Vec<ExperimentLine>,
    /// The newest ended ones (at most 10).
    pub recent: Vec<ExperimentLine>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ExperimentLine {
    pub id: ExperimentId,
    pub name: String,
    pub status: ExperimentStatus,
    pub scenario: String,
    #[schemars(with = "String")]
    #[serde(serialize_with = "falcon_core::time::rfc3339")]
    pub created_iso: Millis,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct SkillLine {
    pub name: String,
    pub description: String,
}

pub(crate) async fn context(cx: &Ctx) -> Result<Context> {
    let config = cx.config()?.redacted();
    let mut notes = Vec::new();
    let usage = match cx.exp().await {
        Ok(exp) => match exp.pools().await {
            Ok(u) => Some(u),
            Err(e) => {
                notes.push(format!("pool load not read: {e}"));
                None
            }
        },
        Err(e) => {
            notes.push(format!("the metadata store could not be opened ({e}): no load, goals or experiments"));
            None
        }
    };
    let pools = config
        .pools
        .iter()
        .map(|p| {
            let load = usage.as_ref().and_then(|u| u.iter().find(|u| u.pool.name == p.name));
            PoolContext {
                name: p.name.clone(),
                backend: word(&p.backend),
                zone: p.zone.clone(),
                platform: word(&p.platform),
                accelerators: p.accelerators.clone(),
                capacity: p.capacity,
                used: load.map(|l| l.used),
                running: load.map(|l| l.running),
                waiting: load.map(|l| l.waiting),
                peaks: p.accelerators.iter().filter_map(|a| peak(a)).collect(),
            }
        })
        .collect();
    let mut context = Context {
        falcon: Version { name: "falcon", version: env!("CARGO_PKG_VERSION") },
        stores: Stores {
            data_dir: config.data_dir.display().to_string(),
            db: config.db.clone(),
            artifacts: falcon_core::config::redact_url(&config.artifacts),
        },
        pools,
        queued_experiments: None,
        goals: Vec::new(),
        experiments: Experiments::default(),
        skills: crate::skills::list()?
            .into_iter()
            .map(|s| SkillLine { name: s.name, description: s.description })
            .collect(),
        notes,
    };
    if usage.is_some() {
        if let Err(e) = fill_state(cx, &mut context).await {
            context.notes.push(format!("goals and experiments not read: {e}"));
        }
    }
    Ok(context)
}

async fn fill_state(cx: &Ctx, context: &mut Context) -> Result<()> {
    let exp = cx.exp().await?;
    let provisioning = ExperimentFilter { status: Some(ExperimentStatus::Provisioning), ..Default::default() };
    context.queued_experiments = Some(exp.count(&provisioning).await?);
    let mut goals: Vec<_> = exp
        .goals(None)
        .await?
        .into_iter()
        .filter(|g| matches!(g.status, GoalStatus::Open | GoalStatus::Claimed))
        .collect();
    goals.sort_by_key(|g| (std::cmp::Reverse(g.priority), g.id));
    context.goals = goals
        .into_iter()
        .take(MOST)
        .map(|g| GoalContext {
            id: g.id,
            title: g.title,
            metric: g.metric,
            direction: g.direction.to_string(),
            target: g.target,
            baseline: g.baseline,
            priority: g.priority,
            status: g.status,
            owner: g.owner,
            lease_expires_iso: g.lease_expires,
        })
        .collect();
    let line = |r: falcon_exp::ExperimentRecord| ExperimentLine {
        id: r.id,
        name: r.name,
        status: r.status,
        scenario: r.scenario.to_string(),
        created_iso: r.created,
    };
    let mut active = Vec::new();
    for status in [ExperimentStatus::Running, ExperimentStatus::Provisioning, ExperimentStatus::Pending] {
        let filter = ExperimentFilter { status: Some(status), limit: MOST as u32, ..Default::default() };
        active.extend(exp.list(&filter).await?.into_iter().map(line));
    }
    active.truncate(MOST);
    context.experiments.active = active;
    let newest = exp.list(&ExperimentFilter { limit: 50, ..Default::default() }).await?;
    context.experiments.recent = newest.into_iter().filter(|r| r.status.is_terminal()).take(MOST).map(line).collect();
    Ok(())
}

/// A unit enum's serde name (`local`, `tpu`).
fn word<T: Serialize>(value: &T) -> String {
    serde_json::to_value(value).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

/// The catalog's peaks of an accelerator type, when it knows it.
fn peak(accelerator: &str) -> Option<Peak> {
    let a = falcon_core::catalog::lookup(accelerator).ok()?;
    Some(Peak {
        accelerator: a.name.clone(),
        chip: a.chip.name,
        chips: a.chips,
        peak_bf16_tflops: a.chip.peak_bf16_tflops,
        hbm_gbps: a.chip.hbm_gbps,
        hbm_bytes: a.chip.hbm_bytes,
    })
}

impl Context {
    /// The context as Markdown, at most [`MARKDOWN_LIMIT`] bytes.
    pub fn markdown(&self) -> String {
        let mut out = format!(
            "# Falcon context\n\n{} {} · db `{}` · artifacts `{}`. With `--json` every command prints one JSON \
             object (errors `{{\"error\": {{code, message, hint}}}}`); exit codes: 0 ok, 1 failure, 2 usage, 3 not \
             found, 4 conflict, 5 regression.\n\n## Pools\n\n| pool | backend | zone | accelerators | capacity | used | \
             running | waiting | peak per chip |\n|---|---|---|---|---|---|---|---|---|\n",
            self.falcon.name, self.falcon.version, self.stores.db, self.stores.artifacts
        );
        let opt = |v: Option<u32>| v.map_or("?".to_string(), |v| v.to_string());
        for p in &self.pools {
            let peaks: Vec<String> = p
                .peaks
                .iter()
                .filter(|k| k.peak_bf16_tflops.is_some())
                .map(|k| {
                    format!(
                        "{}: {} TFLOP/s bf16, {} GB/s HBM, {} GB",
                        k.accelerator,
                        k.peak_bf16_tflops.map_or("?".into(), |t| format!("{t}")),
                        k.hbm_gbps.map_or("?".into(), |g| format!("{g}")),
                        k.hbm_bytes.map_or("?".into(), |b| format!("{}", b as f64 / 1e9))
                    )
                })
                .collect();
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                p.name,
                p.backend,
                p.zone,
                p.accelerators.join(", "),
                p.capacity,
                opt(p.used),
                opt(p.running),
                opt(p.waiting),
                if peaks.is_empty() { "—".into() } else { peaks.join("; ") }
            ));
        }
        if let Some(q) = self.queued_experiments {
            out.push_str(&format!("\n{q} experiment(s) wait for a place to run.\n"));
        }
        out.push_str("\n## Goals (open and claimed, by priority)\n\n");
        if self.goals.is_empty() {
            out.push_str("none (`falcon goal create`)\n");
        }
        for g in &self.goals {
            out.push_str(&format!(
                "- {} [{}] {}: {} {} target {} (baseline {}){}\n",
                g.id,
                g.status,
                g.title,
                g.metric,
                g.direction,
                g.target.map_or("—".into(), |t| t.to_string()),
                g.baseline.map_or("none".into(), |b| b.to_string()),
                g.owner.as_deref().map_or(String::new(), |o| format!(", held by {o}"))
            ));
        }
        for (title, list) in
            [("Active experiments", &self.experiments.active), ("Recent experiments", &self.experiments.recent)]
        {
            out.push_str(&format!("\n## {title}\n\n"));
            if list.is_empty() {
                out.push_str("none\n");
            }
            for e in list {
                out.push_str(&format!("- {} {} {} ({})\n", e.id, e.status, e.name, e.scenario));
            }
        }
        out.push_str("\n## Skills (`falcon skills show NAME`)\n\n");
        for s in &self.skills {
            let first = s.description.split(". ").next().unwrap_or(&s.description);
            out.push_str(&format!("- `{}`: {}\n", s.name, first.trim_end_matches('.')));
        }
        if !self.notes.is_empty() {
            out.push_str("\n## Notes\n\n");
            for n in &self.notes {
                out.push_str(&format!("- {n}\n"));
            }
        }
        if out.len() > MARKDOWN_LIMIT {
            let mut cut = MARKDOWN_LIMIT - 120;
            while !out.is_char_boundary(cut) {
                cut -= 1;
            }
            out.truncate(cut);
            out.push_str(
                "\n\n… cut at 8 KB: `falcon context --json` has it all, `falcon exp list` every experiment.\n",
            );
        }
        out
    }
}
