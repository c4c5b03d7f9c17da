//! The crate's integration tests: one binary (linking it once is most of what a test binary costs), a module
//! per file.

mod checkout;
mod doctor;
mod experiments_local;
mod harness;
mod index_before_end;
mod long_lists;
mod pending_recovery;
mod progress;
mod run_level;
mod spec_diff;
mod spec_parse;
mod spec_sweep;
