//! A sweep file, as `falcon session submit` reads it: parsed, its base loaded (a `base: PATH` gets a small valid
//! spec), expanded into at most 1000 checked specs with their names. No panic; errors name the sweep file (or the
//! base) and their `file:LINE:COL` lies inside it.

#![no_main]

use libfuzzer_sys::fuzz_target;

const BASE: &str = "name: base\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [true]\nconfig: {batch_size: 8}\nresources: {accelerator: cpu}\n";

fuzz_target!(|data: &[u8]| {
    let text = falcon_fuzz::text(data);
    match falcon_core::sweep::expand(&text, "sweep.yaml", |_| Ok(BASE.to_string())) {
        Ok(specs) => assert!(specs.len() <= falcon_core::sweep::MAX_COMBINATIONS),
        Err(e) => {
            let message = e.to_string();
            // An error in the base spec names the base; it is not about this input's positions.
            if !message.contains("sweep.yaml") {
                return;
            }
            falcon_fuzz::check_error(&message, "sweep.yaml", data);
        }
    }
});
