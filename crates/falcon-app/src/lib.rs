//! `falcon-app`: the application layer every front end sits on (docs/DESIGN.md §1).
//!
//! The CLI, the Web API and the MCP server are thin shells: they parse a request, call one function here and
//! render the struct it returns. This crate composes EXP (`falcon-exp`) and analysis (`falcon-analysis`) into
//! the use cases those front ends offer, and holds the renderers they share (Markdown, HTML, SVG charts).
//!
//! - **Owns:** use cases that need both EXP and analysis (the goal report, …); the agent skills embedded in the
//!   binary ([`skills`]) and the agent's context ([`context`]); the shared renderers ([`render`]); the one error type of the layer ([`AppError`], with the kind that fixes exit codes).
//! - **Must not:** hold business rules (a goal's progress, verdicts, lifecycle are EXP's; numbers are
//!   analysis'); touch storage or cluster clients (`falcon-infra`, `falcon-job`, `sqlx`, `opendal`, `kube`);
//!   print or read the terminal.
//! - **Invariants:** a use case is implemented once, here, and every front end returns its struct as the same
//!   JSON; missing pieces of a composed answer are notes, not failures.
//!
//! # In detail
//!
//! - **Owns:** every use case a front end offers, on an `App` handle that connects EXP and analysis lazily:
//!   experiments (submit, wait, list as pages, show with the memory verdict composed from its row
//!   (`ExperimentDetail`), metric charts, cancel, logs (tails, from offsets) and follow, artifacts, diff, compare,
//!   history), the worker pass with its analyses (`WorkerEvent`s), goals (create, list, claim, close, compare, the
//!   goal report), sessions, pools, profiles (analyze, trace, fetch, export, compare with config diff), accuracy and
//!   tensors, kernel bench, doctor, `gc` (job folders of ended, collected jobs; the profile cache trimmed LRU to a
//!   cap); the agent skills of `skills/`, embedded at build time (`build.rs`) and listed, shown and installed by
//!   `skills`; the agent's `context` (stores, pools with their load and the catalog's peaks, goals, experiments,
//!   skills; Markdown ≤ 8 KB); `Page` (items + opaque cursor); `AppError` (kind → exit code / HTTP status, hint); the
//!   shared renderers in `render/` (Markdown, HTML, inline SVG — roofline, distributions, bars, line charts with
//!   min/max thinning — text tables from the same section model; `memory` for the verdict's terminal lines)
//! - **Must not:** hold business rules (progress, verdicts, lifecycle are EXP's; numbers are analysis'); name
//!   `falcon-infra`, `falcon-job`, `sqlx`, `opendal`, `kube`; print
//! - **Invariants:** a use case exists once; missing parts of a composed answer are notes, not failures

pub mod accuracy;
mod app;
pub mod context;
pub mod contract;
pub mod error;
pub mod experiments;
pub mod files;
pub mod gc;
pub mod goal_report;
pub mod goals;
pub mod init;
pub mod kernel;
pub mod page;
pub mod profiles;
pub mod render;
pub mod series;
pub mod session_grid;
pub mod setup;
pub mod skills;
pub mod tokens;
pub mod worker;

pub use app::App;
pub use error::{AppError, Result};
pub use falcon_core::config::Config;
