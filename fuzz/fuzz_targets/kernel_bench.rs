//! Kernel-bench results through the file-reading path `falcon kernel analyze` takes — the same bytes as a
//! `.jsonl` and as a `.csv` — then analysed and compared with themselves. No panic; errors name the file and
//! lines lie inside it. The comparison draws 50 bootstrap resamples, not 2,000: the same code, fast enough to
//! fuzz (the statistics themselves are property-tested in falcon-core).

#![no_main]

use falcon_analysis::kernel_bench::{analyze, compare_with, read_results, KernelOptions};
use falcon_core::stats::CompareOptions;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for name in ["kernel_bench.jsonl", "kernel_bench.csv"] {
        let path = falcon_fuzz::file(name, data);
        match read_results(&path) {
            Ok(results) => {
                let options = KernelOptions { p: 1.0, peak_tflops: Some(100.0), peak_gbs: Some(1000.0) };
                let _ = analyze(&results, &options);
                let stats = CompareOptions { bootstrap: 50, ..CompareOptions::default() };
                let _ = compare_with(&results, &results, &stats);
            }
            Err(e) => falcon_fuzz::check_error(&e.to_string(), name, data),
        }
    }
});
