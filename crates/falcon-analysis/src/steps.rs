//! Step detection (being written).
