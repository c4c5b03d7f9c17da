//! A tensor dump as a `.npy` file ([`falcon_fuzz::tensor_dump`]). No panic; errors name the file and any byte
//! offset lies inside it.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| falcon_fuzz::tensor_dump("dump.npy", data));
