//! What `squeue --json` prints (the 22.05 shape and the 23.11+ one) and what a Slurm job state means to the
//! job manager: [`SlurmJob`], [`parse_squeue`], [`map_state`], [`decode_exit`], [`is_unschedulable`].

use crate::backend::BackendState;
use serde_json::Value;

/// The fields of one `squeue --json` job this backend uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlurmJob {
    /// `job_id`.
    pub job_id: u64,
    /// `name` (the object name, for jobs of this backend).
    pub name: String,
    /// `job_state`: the 22.05 string, or the deciding element of the 23.11+ list (flags such as `COMPLETING`
    /// before the base state, as 22.05 shows them).
    pub state: String,
    /// `state_reason` (`"None"` when there is none).
    pub reason: String,
    /// `exit_code`: the raw wait status (`exit 3` → 768), when known. See [`decode_exit`].
    pub exit_status: Option<i64>,
    /// `standard_output`: the `--output` pattern (22.05 leaves it unexpanded; `""` when not given).
    pub standard_output: Option<String>,
    /// `start_time`: when it started running, seconds since the epoch (0 or unset before it starts).
    pub start_time: Option<i64>,
    /// `end_time`: when it ended, seconds since the epoch (while it runs, the time limit's end: read only once it
    /// has ended).
    pub end_time: Option<i64>,
}

impl SlurmJob {
    /// This job as a JSON object shaped like a 22.05 `squeue --json` entry (what `final.json` holds).
    pub(super) fn to_json(&self) -> Value {
        serde_json::json!({
            "job_id": self.job_id,
            "name": self.name,
            "job_state": self.state,
            "state_reason": self.reason,
            "exit_code": self.exit_status,
            "standard_output": self.standard_output,
            "start_time": self.start_time,
            "end_time": self.end_time,
        })
    }
}

/// An integer field: a number, or the `{"set", "infinite", "number"}` object of data_parser v0.0.40+.
fn number(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => {
            n.as_i64().or_else(|| n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15).map(|f| f as i64))
        }
        Value::Object(o) => {
            if o.get("set").and_then(Value::as_bool) == Some(false)
                || o.get("infinite").and_then(Value::as_bool) == Some(true)
            {
                return None;
            }
            o.get("number").and_then(number)
        }
        _ => None,
    }
}

/// Flags that Slurm 22.05 shows instead of the base state (in its order); later versions list them beside it.
const FLAG_STATES: [&str; 12] = [
    "COMPLETING",
    "STAGE_OUT",
    "CONFIGURING",
    "RESIZING",
    "REQUEUED",
    "REQUEUE_FED",
    "REQUEUE_HOLD",
    "SPECIAL_EXIT",
    "STOPPED",
    "REVOKED",
    "RESV_DEL_HOLD",
    "SIGNALING",
];

const BASE_STATES: [&str; 12] = [
    "PENDING",
    "RUNNING",
    "SUSPENDED",
    "COMPLETED",
    "CANCELLED",
    "FAILED",
    "TIMEOUT",
    "NODE_FAIL",
    "PREEMPTED",
    "BOOT_FAIL",
    "DEADLINE",
    "OUT_OF_MEMORY",
];

/// The deciding state of a 23.11+ `job_state` list.
fn pick_state(states: &[String]) -> Option<String> {
    FLAG_STATES
        .iter()
        .find(|f| states.iter().any(|s| s == *f))
        .map(|s| s.to_string())
        .or_else(|| states.iter().find(|s| BASE_STATES.contains(&s.as_str())).cloned())
        .or_else(|| states.first().cloned())
}

/// The raw wait status in `exit_code`: an integer (22.05), or the v0.0.40+ object with `return_code` and
/// `signal.id`.
fn exit_status(value: Option<&Value>) -> Option<i64> {
    let value = value?;
    if let Some(raw) = number(value) {
        return Some(raw);
    }
    let o = value.as_object()?;
    let signal = o.get("signal").and_then(|s| s.get("id").or(Some(s))).and_then(number).unwrap_or(0);
    if (1..0x7f).contains(&signal) {
        return Some(signal);
    }
    let code = o.get("return_code").and_then(number)?;
    Some((code & 0xff) << 8)
}

/// One job object of `squeue --json` (or of `final.json`).
pub(super) fn parse_job(job: &Value) -> std::result::Result<SlurmJob, String> {
    let o = job.as_object().ok_or("a job entry is not an object")?;
    let job_id =
        o.get("job_id").and_then(number).filter(|id| *id >= 0).ok_or("a job entry has no numeric `job_id`")? as u64;
    let text = |key: &str| o.get(key).and_then(Value::as_str).map(str::to_string);
    let state = match o.get("job_state") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(Value::Array(list)) => {
            let states: Vec<String> = list.iter().filter_map(Value::as_str).map(str::to_string).collect();
            pick_state(&states).ok_or_else(|| format!("job {job_id}: `job_state` is an empty list"))?
        }
        other => {
            return Err(format!(
                "job {job_id}: `job_state` is {}",
                other.map_or("missing".into(), |v| format!("`{v}`"))
            ))
        }
    };
    Ok(SlurmJob {
        job_id,
        name: text("name").unwrap_or_default(),
        state,
        reason: text("state_reason").unwrap_or_else(|| "None".into()),
        exit_status: exit_status(o.get("exit_code")),
        standard_output: text("standard_output"),
        start_time: o.get("start_time").and_then(number).filter(|t| *t > 0),
        end_time: o.get("end_time").and_then(number).filter(|t| *t > 0),
    })
}

/// The jobs in `squeue --json` output, every state; filter them yourself (22.05 ignores `-j`/`--state` with
/// `--json`). Accepts the 22.05 shape (openapi v0.0.38) and the 23.11+ one (`job_state` lists, numbers as
/// `{set, infinite, number}`). Errors name squeue and what was wrong; nothing here panics.
pub fn parse_squeue(json: &str) -> std::result::Result<Vec<SlurmJob>, String> {
    let value: Value = serde_json::from_str(json).map_err(|e| {
        let start: String = json.trim().chars().take(120).collect();
        format!("squeue --json printed invalid JSON ({e}): `{start}`")
    })?;
    let o = value.as_object().ok_or("squeue --json printed JSON that is not an object")?;
    let meta = o.get("meta").and_then(|m| m.get("plugin"));
    let plugin = meta
        .and_then(|p| p.get("data_parser").or_else(|| p.get("type")))
        .and_then(Value::as_str)
        .unwrap_or("unknown plugin")
        .to_string();
    if let Some(errors) = o.get("errors").and_then(Value::as_array).filter(|e| !e.is_empty()) {
        let said: Vec<String> = errors
            .iter()
            .map(|e| {
                let field = |k: &str| e.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
                match (field("description"), field("source"), field("error")) {
                    (Some(d), Some(s), Some(x)) => format!("{d} ({s}: {x})"),
                    (Some(d), None, Some(x)) => format!("{d} ({x})"),
                    (Some(d), _, None) => d.to_string(),
                    (None, _, Some(x)) => x.to_string(),
                    (None, _, None) => e.to_string(),
                }
            })
            .collect();
        return Err(format!("squeue --json ({plugin}) reported errors: {}", said.join("; ")));
    }
    let jobs =
        o.get("jobs").and_then(Value::as_array).ok_or_else(|| format!("squeue --json ({plugin}): no `jobs` list"))?;
    jobs.iter().map(|j| parse_job(j).map_err(|m| format!("squeue --json ({plugin}): {m}"))).collect()
}

/// The exit code in a raw wait(2) status as Slurm reports it: `status >> 8` for a normal exit
/// (`status & 0x7f == 0`), else `128 + signal` (the shell's convention). `None` for values that are no wait
/// status (negative, above 16 bits, a stopped process).
pub fn decode_exit(status: i64) -> Option<i32> {
    if !(0..=0xffff).contains(&status) {
        return None;
    }
    match status & 0x7f {
        0 => Some(((status >> 8) & 0xff) as i32),
        0x7f => None,
        signal => Some(128 + signal as i32),
    }
}

/// Whether a pending job waits for capacity the pool lacks now (a stockout the manager fails over from), by its
/// `state_reason`: `Resources`, `Priority` (queued behind other jobs for the same capacity), nodes down or
/// unavailable, partition limits or a partition that is down. Holds, dependencies, begin times, licenses and
/// account limits are not capacity.
pub fn is_unschedulable(reason: &str) -> bool {
    const REASONS: [&str; 10] = [
        "Resources",
        "Priority",
        "ReqNodeNotAvail",
        "NodeDown",
        "PartitionNodeLimit",
        "PartitionTimeLimit",
        "PartitionDown",
        "PartitionInactive",
        "BadConstraints",
        "PartitionConfig",
    ];
    let reason = reason.trim();
    REASONS.iter().any(|r| reason == *r || reason.starts_with(&format!("{r},")))
        || reason.starts_with("Nodes_required_for_job_are_DOWN")
        || reason.starts_with("Nodes required for job are DOWN")
}

/// What a Slurm job state means to the job manager. Errors name an unknown state.
pub fn map_state(job: &SlurmJob) -> std::result::Result<BackendState, String> {
    let reason = Some(job.reason.trim()).filter(|r| !r.is_empty() && *r != "None");
    let state = job.state.trim().to_ascii_uppercase();
    let slurm = match reason {
        Some(r) => format!("Slurm {state}: {r}"),
        None => format!("Slurm {state}"),
    };
    let code = job.exit_status.and_then(decode_exit).filter(|c| *c != 0);
    let ended = || match code {
        Some(c) if c > 128 => format!("killed by signal {}", c - 128),
        Some(c) => format!("exited with status {c}"),
        None => "ended without an exit status".to_string(),
    };
    Ok(match state.as_str() {
        "PENDING" | "REQUEUED" | "REQUEUE_FED" | "REQUEUE_HOLD" | "RESV_DEL_HOLD" | "POWER_UP_NODE" => {
            BackendState::Pending {
                reason: reason.unwrap_or(&state).to_string(),
                unschedulable: reason.is_some_and(is_unschedulable),
            }
        }
        "CONFIGURING" | "RUNNING" | "COMPLETING" | "SUSPENDED" | "STOPPED" | "RESIZING" | "SIGNALING" | "STAGE_OUT"
        | "UPDATE_DB" => BackendState::Running {
            started: job.start_time.and_then(|s| s.checked_mul(1000)).map(falcon_core::time::Millis),
        },
        "COMPLETED" => BackendState::Succeeded,
        "FAILED" | "SPECIAL_EXIT" | "LAUNCH_FAILED" | "RECONFIG_FAIL" => {
            BackendState::Failed { exit_code: code, reason: format!("{} ({slurm})", ended()) }
        }
        "OUT_OF_MEMORY" => {
            BackendState::Failed { exit_code: code, reason: format!("out of memory: {} ({slurm})", ended()) }
        }
        "BOOT_FAIL" => BackendState::Failed { exit_code: code, reason: format!("a node failed to boot ({slurm})") },
        "DEADLINE" => BackendState::Failed { exit_code: code, reason: format!("Slurm deadline reached ({slurm})") },
        "TIMEOUT" => BackendState::Failed { exit_code: None, reason: "Slurm time limit reached".into() },
        "CANCELLED" | "REVOKED" => BackendState::Cancelled,
        "PREEMPTED" | "NODE_FAIL" => BackendState::Preempted { reason: slurm },
        _ => return Err(format!("unknown job_state `{}`", job.state)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const EMPTY: &str = include_str!("../../../tests/data/slurm/squeue_empty.json");
    const PENDING: &str = include_str!("../../../tests/data/slurm/squeue_pending.json");
    const FILTER_IGNORED: &str = include_str!("../../../tests/data/slurm/squeue_json_j_filter_ignored.json");
    const RUNNING: &str = include_str!("../../../tests/data/slurm/squeue_running.json");
    const FAILED: &str = include_str!("../../../tests/data/slurm/squeue_failed.json");
    const MIXED: &str = include_str!("../../../tests/data/slurm/squeue_mixed_terminal.json");
    const NODE_FAIL: &str = include_str!("../../../tests/data/slurm/squeue_node_fail.json");
    const ALL_TERMINAL: &str = include_str!("../../../tests/data/slurm/squeue_all_terminal.json");
    /// `squeue --json` exits 0 when slurmctld is unreachable: the `errors` list says so (CONTROLLER_DOWN.md).
    const CONTROLLER_DOWN: &str = include_str!("../../../tests/data/slurm/squeue_controller_down.json");

    fn job(json: &str, id: u64) -> SlurmJob {
        parse_squeue(json).unwrap().into_iter().find(|j| j.job_id == id).unwrap()
    }

    fn state(json: &str, id: u64) -> BackendState {
        map_state(&job(json, id)).unwrap()
    }

    #[test]
    fn squeue_snapshots_parse_with_every_job() {
        assert_eq!(parse_squeue(EMPTY).unwrap(), vec![]);
        let ids = |json: &str| parse_squeue(json).unwrap().iter().map(|j| j.job_id).collect::<Vec<_>>();
        assert_eq!(ids(PENDING), [1, 2, 3]);
        assert_eq!(ids(FILTER_IGNORED), [1, 2, 3], "-j is ignored with --json: filter by job_id");
        assert_eq!(ids(RUNNING), [1, 2, 3]);
        assert_eq!(ids(FAILED), [1, 2, 3, 4, 5, 6]);
        assert_eq!(ids(MIXED), [1, 2, 3, 4, 5, 6]);
        assert_eq!(ids(NODE_FAIL), [1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(ids(ALL_TERMINAL), [1, 2, 3, 4, 5, 6, 7, 8]);
        let pend = job(PENDING, 2);
        assert_eq!(
            pend,
            SlurmJob {
                job_id: 2,
                name: "pend".into(),
                state: "PENDING".into(),
                reason: "Resources".into(),
                exit_status: Some(0),
                standard_output: Some("<REPO>/.cache/slurm/jobs/%x-%j.out".into()),
                start_time: job(PENDING, 2).start_time,
                end_time: job(PENDING, 2).end_time,
            }
        );
        assert_eq!(job(FAILED, 5).exit_status, Some(768));
    }

    #[test]
    fn states_map_as_the_manager_needs() {
        assert!(matches!(state(PENDING, 1), BackendState::Running { .. }));
        assert_eq!(state(PENDING, 2), BackendState::Pending { reason: "Resources".into(), unschedulable: true });
        assert_eq!(state(PENDING, 3), BackendState::Pending { reason: "JobHeldUser".into(), unschedulable: false });
        assert_eq!(state(RUNNING, 1), BackendState::Cancelled);
        let running = job(RUNNING, 2);
        assert!(running.start_time.is_some_and(|t| t > 1_600_000_000), "{running:?}");
        let started = running.start_time.map(|t| falcon_core::time::Millis(t * 1000));
        assert_eq!(state(RUNNING, 2), BackendState::Running { started }, "with Slurm's own start time");
        assert_eq!(state(FAILED, 2), BackendState::Succeeded);
        assert!(matches!(state(FAILED, 4), BackendState::Running { .. }));
        match state(FAILED, 5) {
            BackendState::Failed { exit_code: Some(3), reason } => {
                assert!(
                    reason.contains("exited with status 3")
                        && reason.contains("FAILED")
                        && reason.contains("NonZeroExitCode"),
                    "{reason}"
                )
            }
            other => panic!("{other:?}"),
        }
        match state(FAILED, 6) {
            BackendState::Failed { exit_code: Some(137), reason } => {
                assert!(reason.contains("signal 9") && reason.contains("JobLaunchFailure"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            state(MIXED, 4),
            BackendState::Failed { exit_code: None, reason: "Slurm time limit reached".into() }
        );
        assert_eq!(state(MIXED, 3), BackendState::Cancelled, "cancelled while held");
        match state(NODE_FAIL, 7) {
            BackendState::Preempted { reason } => {
                assert!(reason.contains("NODE_FAIL") && reason.contains("NodeDown"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(state(NODE_FAIL, 8), BackendState::Pending { reason: "BeginTime".into(), unschedulable: false });
        assert_eq!(state(ALL_TERMINAL, 8), BackendState::Cancelled);
    }

    #[test]
    fn exit_statuses_decode_like_wait() {
        assert_eq!(decode_exit(0), Some(0));
        assert_eq!(decode_exit(768), Some(3));
        assert_eq!(decode_exit(9), Some(137));
        assert_eq!(decode_exit(15), Some(143));
        assert_eq!(decode_exit(255 << 8), Some(255));
        assert_eq!(decode_exit(0x8b), Some(139), "core dump flag ignored");
        for odd in [-1, -2, 0x10000, i64::MAX, i64::MIN, 0x7f] {
            assert_eq!(decode_exit(odd), None, "{odd}");
        }
    }

    #[test]
    fn newer_json_shapes_are_understood() {
        let v40 = r#"{"meta": {"plugin": {"type": "openapi/slurmctld", "data_parser": "data_parser/v0.0.40"}},
            "errors": [], "warnings": [], "jobs": [
            {"job_id": 9, "name": "a", "job_state": ["RUNNING"], "state_reason": "None",
             "exit_code": {"status": ["SUCCESS"], "return_code": {"set": true, "infinite": false, "number": 0}}},
            {"job_id": 10, "name": "b", "job_state": ["FAILED"], "state_reason": "NonZeroExitCode",
             "exit_code": {"status": ["EXITED"], "return_code": {"set": true, "infinite": false, "number": 3},
                           "signal": {"id": {"set": false, "infinite": false, "number": 0}, "name": ""}}},
            {"job_id": 11, "name": "c", "job_state": ["CANCELLED", "COMPLETING"], "exit_code": null},
            {"job_id": 12, "name": "d", "job_state": ["FAILED"],
             "exit_code": {"status": ["SIGNALED"], "return_code": {"set": true, "number": 0},
                           "signal": {"id": {"set": true, "number": 9}, "name": "KILL"}}},
            {"job_id": 13, "name": "e", "job_state": ["PENDING", "REQUEUED"], "state_reason": "BeginTime"}]}"#;
        let jobs = parse_squeue(v40).unwrap();
        let states: Vec<_> = jobs.iter().map(|j| map_state(j).unwrap()).collect();
        assert!(matches!(states[0], BackendState::Running { .. }));
        assert!(matches!(&states[1], BackendState::Failed { exit_code: Some(3), .. }), "{:?}", states[1]);
        assert!(matches!(states[2], BackendState::Running { .. }), "still completing");
        assert!(matches!(&states[3], BackendState::Failed { exit_code: Some(137), .. }), "{:?}", states[3]);
        assert_eq!(states[4], BackendState::Pending { reason: "BeginTime".into(), unschedulable: false });
    }

    #[test]
    fn odd_squeue_output_is_an_error_not_a_panic() {
        let cases = [
            ("", "invalid JSON"),
            ("slurm_load_jobs error: Unable to contact slurm controller", "invalid JSON"),
            ("[]", "not an object"),
            ("{}", "no `jobs` list"),
            (r#"{"jobs": {}}"#, "no `jobs` list"),
            (r#"{"jobs": [1]}"#, "not an object"),
            (r#"{"jobs": [{"name": "x"}]}"#, "job_id"),
            (r#"{"jobs": [{"job_id": -4, "job_state": "RUNNING"}]}"#, "job_id"),
            (r#"{"jobs": [{"job_id": 4}]}"#, "`job_state` is missing"),
            (r#"{"jobs": [{"job_id": 4, "job_state": 7}]}"#, "`job_state` is `7`"),
            (r#"{"jobs": [{"job_id": 4, "job_state": []}]}"#, "empty list"),
            (r#"{"errors": [{"error": "Unable to contact slurm controller"}], "jobs": []}"#, "Unable to contact"),
            (&PENDING[..PENDING.len() / 2], "invalid JSON"),
            (CONTROLLER_DOWN, "reported errors: Failed while looking for jobs (slurm_load_jobs: Unspecified error)"),
        ];
        for (text, expected) in cases {
            let err = parse_squeue(text).unwrap_err();
            assert!(err.contains("squeue --json") && err.contains(expected), "{text:?}: {err}");
        }
        let odd = SlurmJob {
            job_id: 1,
            name: "x".into(),
            state: "WEIRD".into(),
            reason: "None".into(),
            exit_status: Some(-7),
            standard_output: None,
            start_time: None,
            end_time: None,
        };
        assert!(map_state(&odd).unwrap_err().contains("WEIRD"));
        let strange = r#"{"jobs": [{"job_id": 4.0, "job_state": "FAILED", "exit_code": "x", "name": null}]}"#;
        assert_eq!(
            map_state(&parse_squeue(strange).unwrap()[0]).unwrap(),
            BackendState::Failed { exit_code: None, reason: "ended without an exit status (Slurm FAILED)".into() }
        );
    }

    #[test]
    fn unschedulable_reasons_are_about_capacity() {
        for yes in [
            "Resources",
            "Priority",
            "ReqNodeNotAvail",
            "ReqNodeNotAvail, UnavailableNodes:n1",
            "NodeDown",
            "PartitionNodeLimit",
        ] {
            assert!(is_unschedulable(yes), "{yes}");
        }
        for no in
            ["JobHeldUser", "JobHeldAdmin", "BeginTime", "Dependency", "None", "", "Licenses", "QOSMaxJobsPerUserLimit"]
        {
            assert!(!is_unschedulable(no), "{no}");
        }
    }
}
