//! The REST interface (planned in the seed): axum routes over the EXP and analysis facades.
//!
//! Like the CLI, it never reaches storage or cluster clients directly. The foundation issue places it in the
//! workspace so the layering test covers it from the start.
