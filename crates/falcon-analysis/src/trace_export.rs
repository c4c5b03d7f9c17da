//! Chrome trace export (being written).
