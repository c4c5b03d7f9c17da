//! `falcon-app`'s use cases tested in process, over [`falcon_app::App`] on a SQLite file in a temporary folder and
//! a memory artifact store of its own (`harness`) — no `falcon` binary spawned. One test binary for the crate; each
//! area a module. (What only the binary can show — exit codes, stdout and stderr, flags, signals, the served API and
//! stdio MCP — stays in `falcon-cli/tests/it`.)

mod fixtures;
mod harness;

mod accuracy;
mod agent_lists;
mod code_versions;
mod compare;
mod experiments;
mod first_answers;
mod goal_report;
mod goodput;
mod kernel;
mod memory;
mod numbers_in_text;
mod profile;
mod pytorch;
mod requests;
mod run_level;
mod structure;
mod tensors;
mod trace;
