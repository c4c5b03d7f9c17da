//! MaxText's metrics JSONL and its console log, as `falcon accuracy compare` reads them, then aligned with
//! themselves. No panic; errors name the file and lines lie inside it.

#![no_main]

use falcon_analysis::accuracy::align::{align, AlignOptions};
use falcon_analysis::accuracy::maxtext::{parse_console, parse_jsonl};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = falcon_fuzz::text(data);
    for (name, result) in
        [("metrics.jsonl", parse_jsonl(&text, "metrics.jsonl")), ("console.log", parse_console(&text, "console.log"))]
    {
        match result {
            Ok(series) => {
                let _ = align(&series, &series, &AlignOptions::default());
            }
            Err(e) => falcon_fuzz::check_error(&e.to_string(), name, data),
        }
    }
});
