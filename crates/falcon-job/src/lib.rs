//! Job orchestration: standardized job specs run on resource pools.
//!
//! Owns `JobSpec`, pools, the scheduler, the local / Slurm / Kubernetes backends, the status monitor and log
//! collection. It knows no business words (no experiment, no goal). Filled by the job-orchestration issue; the
//! foundation issue places it in the workspace with its allowed dependencies.
