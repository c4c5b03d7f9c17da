//! TensorBoard event files (records with CRCs, Event protos, scalar summaries), as `falcon accuracy compare` reads
//! them. No panic; errors name the file and byte offsets lie inside it.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = falcon_analysis::accuracy::tfevents::parse(data, "events.out.tfevents.fuzz") {
        falcon_fuzz::check_error(&e.to_string(), "events.out.tfevents.fuzz", data);
    }
});
