//! Statistics shared by EXP and analysis (being written).
