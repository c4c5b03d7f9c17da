//! The Slurm backend (being written).
