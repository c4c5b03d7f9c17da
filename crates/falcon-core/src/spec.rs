//! Experiment specs (being written).
