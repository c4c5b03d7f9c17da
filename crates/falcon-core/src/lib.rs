//! Falcon's shared vocabulary.
//!
//! Everything here is pure: types, parsing of strings, and the configuration merge. Nothing in this crate
//! touches the file system, the network or the environment; the interface layer reads those and hands the
//! values in.

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
