//! The crate's integration tests: one binary (linking it once is most of what a test binary costs), a module
//! per file.

mod accuracy_cli;
mod agent_cli;
mod agent_lists_cli;
mod api_cli;
mod bisect_cli;
mod cli;
mod common;
mod compare_cli;
mod config_show;
mod contract;
mod dashboard_cli;
mod declared_once;
mod exp_cli;
mod failure_reason_cli;
mod fan_out_cli;
mod first_answers_cli;
mod goal_report_cli;
mod gpu_mfu_cli;
mod html_report;
mod json_contract;
mod kernel_cli;
mod mcp_cli;
mod multihost_cli;
mod profile_cli;
mod reliability_cli;
mod reliability_inputs;
mod reliability_state;
mod reliability_worker;
mod run_level_cli;
mod security_cli;
mod security_connections;
mod security_workloads;
mod tensors_cli;
mod verdict_cli;
