//! The experiment spec, YAML or JSON, as `falcon exp submit` reads it (parse, check every field, canonical
//! snapshot and config hash). No panic; errors name the file and their `file:LINE:COL` lies inside it.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = falcon_fuzz::text(data);
    match falcon_core::spec::parse_spec(&text, "spec.yaml") {
        Ok(spec) => {
            let _ = spec.config_hash();
        }
        Err(e) => falcon_fuzz::check_error(&e.to_string(), "spec.yaml", data),
    }
});
