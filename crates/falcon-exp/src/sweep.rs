//! Sweep expansion (being written).
