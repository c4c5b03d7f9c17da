//! Benchmark: change-point detection on series files, for `bench/otava/run.sh` (Falcon vs Apache Otava on the
//! same files; see bench/otava/README.md).
//!
//! Run: `cargo bench -p falcon-core --bench change_points -- FILE_OR_DIR...`
//!
//! Each argument is a file (one value per line) or a folder (every `*.txt` in it, in name order). For each file
//! it prints two JSON lines: `"tool": "falcon"`, the indices found by E-divisive (`change_points` with
//! `ChangePointOptions::default()`), and `"tool": "falcon-shift"`, those found by the small-n shift detector
//! (`shifts` with `ShiftOptions::default()`), each with the median and minimum wall time of 5 runs after one
//! warm-up run. `bench/otava/report.py` scores them.

use falcon_core::stats::{change_points, shifts, ChangePointOptions, ShiftOptions};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

fn series_files(args: &[String]) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    for arg in args {
        let path = PathBuf::from(arg);
        if path.is_dir() {
            let entries = std::fs::read_dir(&path).map_err(|e| format!("{arg}: {e}"))?;
            let mut in_dir: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.extension().is_some_and(|x| x == "txt"))
                .collect();
            in_dir.sort();
            files.extend(in_dir);
        } else {
            files.push(path);
        }
    }
    Ok(files)
}

fn read_series(path: &PathBuf) -> Result<Vec<f64>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| l.trim().parse().map_err(|e| format!("{}:{}: `{l}`: {e}", path.display(), i + 1)))
        .collect()
}

fn run(args: &[String]) -> Result<(), String> {
    let files = series_files(args)?;
    if files.is_empty() {
        return Err("no series files: give files (one value per line) or folders of *.txt".into());
    }
    let opts = ChangePointOptions::default();
    let shift_opts = ShiftOptions::default();
    for path in files {
        let x = read_series(&path)?;
        let (indices, times) = timed(|| change_points(&x, &opts).iter().map(|c| c.index).collect());
        print_row("falcon", &path, x.len(), &indices, &times);
        let (indices, times) = timed(|| shifts(&x, &shift_opts).shifts.iter().map(|s| s.index).collect());
        print_row("falcon-shift", &path, x.len(), &indices, &times);
    }
    Ok(())
}

/// The result of `f` and its sorted wall times over 5 runs after one warm-up run.
fn timed(f: impl Fn() -> Vec<usize>) -> (Vec<usize>, Vec<f64>) {
    let _ = f(); // warm-up
    let mut times = Vec::with_capacity(5);
    let mut found = Vec::new();
    for _ in 0..5 {
        let t0 = Instant::now();
        found = f();
        times.push(t0.elapsed().as_secs_f64());
    }
    times.sort_unstable_by(f64::total_cmp);
    (found, times)
}

fn print_row(tool: &str, path: &std::path::Path, n: usize, indices: &[usize], times: &[f64]) {
    println!(
        "{}",
        serde_json::json!({
            "tool": tool, "file": path.display().to_string(), "n": n, "indices": indices,
            "wall_s_median": times[2], "wall_s_min": times[0],
        })
    );
}

fn main() -> ExitCode {
    // `cargo bench` passes `--bench`; every other argument names series.
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("change_points bench: {e}");
            ExitCode::FAILURE
        }
    }
}
