//! A Chrome / PyTorch trace through the file-reading path `falcon profile trace` takes, then the trace analyses
//! (per-step breakdown, overlap, gaps, host wait by the launch) over whatever timeline it gives, and the kernel,
//! op and launch view `profile analyze` makes of a Chrome trace, with the profiler-overhead reading of step times. The input is the file: gzip when it
//! starts with gzip's magic (a `.json.gz`, inflation capped); after a leading `!`, the rest gzipped here (so the
//! fuzzer mutates JSON inside gzip); else plain JSON. No panic; errors name the file.

#![no_main]

use falcon_analysis::timeline::chrome::read_chrome_trace_file_with;
use falcon_analysis::trace::{analyze_trace, TraceOptions};
use libfuzzer_sys::fuzz_target;
use std::io::Write;

fuzz_target!(|data: &[u8]| {
    let (name, bytes, original): (&str, Vec<u8>, &[u8]) = match data {
        [0x1f, 0x8b, ..] => ("trace.json.gz", data.to_vec(), data),
        [b'!', rest @ ..] => {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            gz.write_all(rest).unwrap();
            ("trace.json.gz", gz.finish().unwrap(), rest)
        }
        _ => ("trace.json", data.to_vec(), data),
    };
    let path = falcon_fuzz::file(name, &bytes);
    match read_chrome_trace_file_with(&path, falcon_fuzz::MAX_INFLATE) {
        Ok(timeline) => {
            let report = analyze_trace(&timeline, &TraceOptions::default());
            let _ = falcon_analysis::trace::summary(&report);
            let file = falcon_analysis::input::HostFile { host: "trace".into(), path: path.clone(), cached: false };
            let profile = falcon_analysis::profile::from_trace::analyze_timeline(
                &file,
                &timeline,
                &falcon_analysis::profile::AnalyzeOptions::default(),
            );
            // The traced steps against step times made from the input's own bytes.
            let steps: Vec<i64> = profile.steps.iter().flat_map(|s| s.steps.iter().map(|r| r.step_num)).collect();
            let points: Vec<(i64, f64)> =
                original.iter().take(16).enumerate().map(|(i, &b)| (i as i64, f64::from(b) / 16.0)).collect();
            let _ = falcon_analysis::trace::overhead::profiler_overhead(&steps, "step_time_s", &points);
        }
        // Positions in a gzipped trace are positions in the JSON inside it.
        Err(e) if name.ends_with(".gz") && original.starts_with(&[0x1f, 0x8b]) => {
            assert!(e.to_string().contains(name), "the error does not name the input: {e}")
        }
        Err(e) => falcon_fuzz::check_error(&e.to_string(), name, original),
    }
});
