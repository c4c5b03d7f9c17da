//! Config diff (being written).
