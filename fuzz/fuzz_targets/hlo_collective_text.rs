//! An XSpace op event's name as the capture stores it — for a TPU/GPU op, its HLO instruction text — read for a
//! collective's message bytes and replica-group size (`timeline::hlo_text`). No panic on any text (unbalanced
//! brackets, huge or malformed dimensions, odd replica groups), time bounded by the text's length.

#![no_main]

use falcon_analysis::timeline::hlo_text::collective_size;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (_, group) = collective_size(&text);
    assert!(group != Some(0), "a group has a member");
});
