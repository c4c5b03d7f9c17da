//! The protocol front ends over `falcon-app` (DESIGN.md §1, §8): the REST API, the dashboard's pages and the
//! MCP server. Not built yet; the crate is in the workspace so the layering test covers it from the start.
//!
//! Like the CLI, it calls only `falcon-app` (never EXP, analysis, storage or cluster clients directly), and
//! returns the same JSON shapes as the CLI's `--json`.
