//! The crate's integration tests: one binary (linking it once is most of what a test binary costs), a module
//! per file.

#[macro_use]
mod common;
mod artifact_store;
mod metastore;
mod outputs;
mod store_limits;
mod upgrade;
