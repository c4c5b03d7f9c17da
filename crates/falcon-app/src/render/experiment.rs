//! An experiment's detail as terminal text (`falcon exp show`): its record, status history, metric summaries,
//! analysis rows, memory verdict, and what its files could not give.

use crate::experiments::ExperimentDetail;
use crate::render::numbers::{bytes, duration_us, fraction_percent, num, percent};
use crate::render::text::new_table;

/// The detail as lines of text, tables included.
/// `code 4f1c2a9b3d0e (main) "Subject" — checked out from /repo, snapshot code/<tree>.tar.gz`, or for a work tree
/// `code 4f1c2a9b3d0e (main, dirty: changes 9a8b7c6d5e4f) "Subject" — recorded from the work tree /repo`.
pub fn code_line(code: &crate::contract::CodeView) -> String {
    let mut tags: Vec<String> = code.branch.iter().cloned().collect();
    match (code.dirty, &code.diff_sha256) {
        (Some(true), Some(hash)) => tags.push(format!("dirty: changes {}", &hash[..hash.len().min(12)])),
        (Some(true), None) => tags.push("dirty".into()),
        _ => {}
    }
    let tags = if tags.is_empty() { String::new() } else { format!(" ({})", tags.join(", ")) };
    let subject = code.subject.as_ref().map(|s| format!(" \"{s}\"")).unwrap_or_default();
    let repo = code.repo.as_deref().unwrap_or("?");
    let how = match &code.snapshot {
        Some(s) => format!("checked out from {repo}, snapshot {} ({})", s.key, bytes(s.size as f64)),
        None => format!("recorded from the work tree {repo}"),
    };
    format!("code {}{tags}{subject} — {how}", &code.commit[..code.commit.len().min(12)])
}

pub fn text(detail: &ExperimentDetail) -> String {
    let mut out: Vec<String> = Vec::new();
    let view = &detail.view;
    let r = &view.record;
    out.push(format!("{} {} — {} ({}), attempt {}", r.id, r.name, r.status, r.scenario, r.attempt));
    out.push(format!("config {}  job {}", r.config_hash, r.job.map_or("—".into(), |j| j.to_string())));
    if let Some(code) = &r.code {
        out.push(code_line(code));
    }
    if let Some(retries) = r.spec.get("retries").and_then(|v| v.as_u64()) {
        let codes: Vec<String> = r
            .spec
            .get("retry_on_exit_codes")
            .and_then(|v| v.as_array())
            .map_or(Vec::new(), |a| a.iter().map(|c| c.to_string()).collect());
        let on = if codes.is_empty() { String::new() } else { format!(" and exit codes {}", codes.join(", ")) };
        out.push(format!("retries {retries}: on preemption{on}"));
    }
    if let Some(reason) = &view.job_reason {
        out.push(format!("job: {reason}"));
    }
    let mut history = new_table(false, ["at", "from", "to", "reason"]);
    for t in &view.history {
        history.add_row([
            t.at.to_rfc3339(),
            t.from.map_or("—".into(), |f| f.to_string()),
            t.to.to_string(),
            t.reason.clone(),
        ]);
    }
    out.push(history.to_string());
    if !view.metrics.is_empty() {
        let mut metrics = new_table(false, ["metric", "count", "mean", "median", "p90", "min", "max", "last"]);
        for (name, m) in &view.metrics {
            metrics.add_row([
                name.clone(),
                m.count.to_string(),
                num(m.mean),
                num(m.median),
                num(m.p90),
                num(m.min),
                num(m.max),
                num(m.last),
            ]);
        }
        out.push(metrics.to_string());
    }
    for a in &view.analysis {
        let mut parts = Vec::new();
        if let Some(m) = a.mfu {
            parts.push(format!("MFU {}", fraction_percent(Some(m))));
        }
        if let Some(s) = crate::render::profile::summary_step_time(a) {
            parts.push(format!("step {s}"));
        }
        if let Some(d) = a.duty_cycle {
            parts.push(format!("duty cycle {}", fraction_percent(Some(d))));
        }
        if let Some(p) = a.peak_memory_bytes {
            parts.push(format!("peak memory {}", bytes(p as f64)));
        }
        if let Some(b) = &a.bound_by {
            parts.push(format!("bound by {b}"));
        }
        if let Some(o) = a.details.get("profiler_overhead").and_then(|o| o.get("ratio")).and_then(|r| r.as_f64()) {
            parts.push(format!("profiler overhead {}× (traced steps against unprofiled ones)", num(o)));
        }
        if let Some(w) = a.details.get("wait_for_peers_percent").and_then(|w| w.as_f64()).filter(|w| *w > 0.0) {
            let t = a.details.get("transfer_percent").and_then(|t| t.as_f64()).unwrap_or(0.0);
            parts.push(format!("waiting for peers {} of the step, collective transfer {}", percent(w), percent(t)));
        }
        if let Some(s) = a.details.get("straggler").filter(|s| !s.is_null()) {
            let host = s.get("host").and_then(|h| h.as_str()).unwrap_or("?");
            let late = s.get("late_us_median").and_then(|l| l.as_f64()).unwrap_or(0.0);
            let (k, n) = (s.get("steps_late").and_then(|k| k.as_u64()), s.get("steps").and_then(|n| n.as_u64()));
            let lost = s.get("lost_percent").and_then(|l| l.as_f64()).unwrap_or(0.0);
            parts.push(format!(
                "straggler {} (last at {} of {} steps, {} late, the others lost {})",
                printable(host),
                k.unwrap_or(0),
                n.unwrap_or(0),
                duration_us(late),
                percent(lost)
            ));
        }
        if let Some(e) = a.details.get("error").and_then(|e| e.as_str()) {
            parts.push(format!("failed: {e}"));
        }
        out.push(format!("{} analysis: {}", a.tool, parts.join(", ")));
    }
    if let Some(memory) = &detail.memory {
        for line in crate::render::memory::lines(memory) {
            out.push(printable(&line));
        }
    }
    if let Some(goodput) = &detail.goodput {
        out.extend(crate::render::goodput::lines(goodput));
    }
    if !view.artifacts.is_empty() {
        out.push(format!("{} artifact(s); `falcon exp artifacts {}` lists them", view.artifacts.len(), r.id));
    }
    if !view.skipped.is_empty() {
        out.push(format!("{} file(s) the job wrote are not stored as written:", view.skipped.len()));
        for s in &view.skipped {
            out.push(format!("  {}: {}", printable(&s.path), printable(&s.reason)));
        }
    }
    if !view.notes.is_empty() {
        out.push(format!("{} note(s) on its files:", view.notes.len()));
        for n in &view.notes {
            let at = n.line.map_or(String::new(), |l| format!(":{l}"));
            out.push(format!("  {}{at}: {}", printable(&n.file), printable(&n.reason)));
        }
    }
    out.join("\n")
}

pub use crate::render::text::printable;
