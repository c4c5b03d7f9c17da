//! XSpace/XPlane decoding for profile analysis.
//!
//! This crate will hold the wire decoder for XProf's `*.xplane.pb` files (the profile-analysis issue). It
//! depends on no other Falcon crate so it can be fuzzed alone. The foundation issue only places it in the
//! workspace, so the layering is visible before the code grows.
