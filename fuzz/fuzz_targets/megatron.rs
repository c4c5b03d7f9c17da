//! Megatron-LM training logs and golden-values JSON, as `falcon accuracy compare` reads them, then aligned with
//! themselves. No panic; errors name the file and lines lie inside it.

#![no_main]

use falcon_analysis::accuracy::align::{align, AlignOptions};
use falcon_analysis::accuracy::megatron::{parse_golden, parse_log};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = falcon_fuzz::text(data);
    for (name, result) in
        [("train.log", parse_log(&text, "train.log")), ("golden.json", parse_golden(&text, "golden.json"))]
    {
        match result {
            Ok(series) => {
                let _ = align(&series, &series, &AlignOptions::default());
            }
            Err(e) => falcon_fuzz::check_error(&e.to_string(), name, data),
        }
    }
});
