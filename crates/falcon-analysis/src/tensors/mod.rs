//! Tensor dump comparison (`.npy`, `.npz`, safetensors). (Being written.)
