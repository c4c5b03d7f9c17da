//! An XProf capture through the file-reading path `falcon profile analyze` takes: the file found as a host's
//! profile, decoded, and every profile tool run over it (overview, ops, HLO stats, roofline, memory, kernels,
//! steps). No panic; an error names the file and any byte offset lies inside it.

#![no_main]

use falcon_analysis::input::find_profiles;
use falcon_analysis::profile::{analyze_files, AnalyzeOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = falcon_fuzz::file("host0.xplane.pb", data);
    let result = find_profiles(&path, None).and_then(|files| analyze_files(&files, &AnalyzeOptions::default()));
    if let Err(e) = result {
        falcon_fuzz::check_error(&e.to_string(), "host0.xplane.pb", data);
    }
});
