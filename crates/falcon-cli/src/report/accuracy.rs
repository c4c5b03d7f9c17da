//! Rendering of the accuracy report. (Being written.)
