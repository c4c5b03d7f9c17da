//! Rendering of the tensors report. (Being written.)
