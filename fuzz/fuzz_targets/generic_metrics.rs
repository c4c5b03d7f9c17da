//! Generic metrics as JSONL and CSV (with the step column found or named), as `falcon accuracy compare` reads
//! them, then aligned with themselves. No panic; errors name the file and lines lie inside it.

#![no_main]

use falcon_analysis::accuracy::align::{align, AlignOptions};
use falcon_analysis::accuracy::generic::{parse_csv, parse_jsonl};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = falcon_fuzz::text(data);
    for step in [None, Some("step")] {
        for (name, result) in
            [("m.jsonl", parse_jsonl(&text, "m.jsonl", step)), ("m.csv", parse_csv(&text, "m.csv", step))]
        {
            match result {
                Ok(series) => {
                    let _ = align(&series, &series, &AlignOptions::default());
                }
                Err(e) => falcon_fuzz::check_error(&e.to_string(), name, data),
            }
        }
    }
});
