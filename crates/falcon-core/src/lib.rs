//! Falcon's shared vocabulary.
//!
//! Everything here is pure: types, parsing of strings, and the configuration merge. Nothing in this crate
//! touches the file system, the network or the environment; the interface layer reads those and hands the
//! values in.
//!
//! # In detail
//!
//! - **Owns:** ids (`e-41`), statuses, the experiment spec and sweep-file grammars (`spec`, `sweep`: parsing,
//!   checking, expansion; pure, so they fuzz without the storage stack), the `summary` vocabulary (summary-row tool
//!   names, the goal metrics the profile row answers), `STANDARD_METRICS`, scenarios, artifact kinds and name
//!   recognition, config types and their pure merge, error kinds and exit codes, timestamps (ms and their RFC 3339
//!   siblings in JSON); the `bound` vocabulary (`BoundBy`: compute, memory, host, partly_host — unknown is `null` —
//!   the host-bound rule and thresholds); the accelerator `catalog`; experiment `spec` parsing with file:line:col
//!   errors, substitution, canonical snapshot and hash; `stats` shared by EXP and analysis (summaries, warm-up,
//!   step-level Mann–Whitney verdicts with bootstrap CIs, run-level verdicts `runs` (t-test on log run medians,
//!   between-run noise from the runs, a history or a default floor, `repeats_needed`; `same` only by an equivalence
//!   test — the 95 % interval inside ±`min_effect` — never for "nothing found"), small-n shift detection `shift`, the
//!   Theil–Sen `trend` with Sen's interval, E-divisive change points, Student's t and normal quantiles in `special`);
//!   `resources`, the line format of a job's sampled resource use (`resources/<attempt>/usage.jsonl`: time,
//!   rss_bytes, cpu_s) the Job module writes and analysis reads; `metrics_jsonl`, the one metrics-JSONL reader EXP
//!   and analysis share (Python `NaN`/`Infinity`, cut-off tails, malformed lines and over-long names skipped and
//!   counted in notes; a line's `time` is the step's wall clock, not a metric)
//! - **Must not:** do I/O; depend on any Falcon crate
//! - **Invariants:** every type that crosses a crate boundary is defined here or in the crate that owns it, never
//!   twice; statistics exist once

pub mod artifact;
pub mod auth;
pub mod bound;
pub mod catalog;
pub mod config;
pub mod error;
pub mod ids;
pub mod metrics_jsonl;
pub mod resources;
pub mod spec;
pub mod stats;
pub mod status;
pub mod summary;
pub mod sweep;
pub mod time;

pub use error::ErrorKind;
