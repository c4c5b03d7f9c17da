//! The infrastructure layer: where Falcon keeps what it knows.
//!
//! - [`MetaStore`]: structured, searchable metadata (goals, sessions, experiments, jobs, artifacts' index,
//!   summaries) in SQL — SQLite by default, MySQL/MariaDB by URL — with versioned per-backend migrations.
//! - [`ArtifactStore`]: large immutable files (profiles, logs, metrics) on Apache OpenDAL — a local directory by
//!   default, `gs://`, `s3://`, or memory for tests.
//!
//! No business logic lives here: which transitions are valid, what a spec means, how to analyse a profile are
//! decided above. This layer stores what it is handed, refuses what would break its rules (values over 1 MiB,
//! unsafe keys) and reports failures with the table, column, key or URI involved.
//!
//! # In detail
//!
//! - **Owns:** `MetaStore` (sqlx; SQLite default, MySQL by URL; per-backend migrations under `migrations/`; the
//!   job-outputs record the Job module writes and EXP reads, experiment notes), `ArtifactStore` (OpenDAL: fs, gcs,
//!   s3, memory)
//! - **Must not:** contain business rules (valid transitions, spec meaning); depend on anything above `falcon-core`
//! - **Invariants:** no value over 1 MiB in a column; every status change appends a history row in the same
//!   transaction; writes are compare-and-set on the current status; object writes are atomic and immutable by
//!   default; unsafe keys are refused before any I/O

mod error;

pub mod artifacts;
pub mod meta;

pub use artifacts::{ArtifactLocation, ArtifactStore, ObjectInfo, ObjectMeta, PutMode};
pub use error::{InfraError, Result};
pub use meta::{DbBackend, MetaStore, MigrationStatus};
