//! Rendering of the kernel report. (Being written.)
