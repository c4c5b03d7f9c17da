//! What sampling a job's resource use costs (a benchmark, not a test), on the local backend's sampler
//! (`backend::procfs::TreeSampler`, what a worker runs every `[jobs] sample_interval_ms`), measured with the
//! scheduler's own count of the sampling thread's time on a CPU (`/proc/thread-self/schedstat`, nanoseconds;
//! the tick-based user/system times are too coarse for this):
//! 1. CPU per sample of a job-like tree (a shell and two Python children, one spinning, in their own process
//!    group): as the worker runs it (a full `/proc` scan every 8th sample) and with a full scan every time.
//! 2. A 250 ms sampling loop for 20 s beside that tree: the loop's CPU time (sampling, sleeping, waking) as a
//!    share of one core and of the machine.
//!
//! Run: `cargo bench -p falcon-job --bench sampling` (about 30 s after the build). Needs `python3` on PATH.

use falcon_job::backend::procfs::TreeSampler;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const INTERVAL: Duration = Duration::from_millis(250);

/// The calling thread's time on a CPU so far, in seconds.
fn thread_cpu() -> f64 {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").expect("/proc/thread-self/schedstat");
    text.split_whitespace().next().and_then(|ns| ns.parse::<u64>().ok()).expect("schedstat") as f64 / 1e9
}

fn processes_on_machine() -> usize {
    let is_pid = |e: &std::fs::DirEntry| e.file_name().to_str().is_some_and(|n| n.parse::<u32>().is_ok());
    std::fs::read_dir("/proc").map_or(0, |d| d.flatten().filter(is_pid).count())
}

/// A job-like tree: `sh` with a spinning and a sleeping Python child, in a process group of its own.
fn job_tree(seconds: u32) -> Child {
    let script = format!(
        "python3 -c 'import time\nt = time.time() + {seconds}\nwhile time.time() < t: pass' & \
         python3 -c 'import time; time.sleep({seconds})' & wait"
    );
    Command::new("sh").arg("-c").arg(script).process_group(0).stdout(Stdio::null()).spawn().expect("sh")
}

/// CPU and wall seconds per sample over `n` samples (`full`: a full scan each time).
fn per_sample(root: i32, n: u32, full: bool) -> (f64, f64) {
    let mut sampler = TreeSampler::new(root);
    let (cpu0, wall0) = (thread_cpu(), Instant::now());
    for _ in 0..n {
        if full {
            sampler = TreeSampler::new(root); // a new sampler's first sample is a full scan
        }
        std::hint::black_box(sampler.sample().expect("the tree is alive"));
    }
    ((thread_cpu() - cpu0) / f64::from(n), wall0.elapsed().as_secs_f64() / f64::from(n))
}

fn main() {
    let mut tree = job_tree(40);
    std::thread::sleep(Duration::from_millis(500));
    let root = tree.id() as i32;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "machine: {cores} cores, {} processes; the sampled tree: {:?}",
        processes_on_machine(),
        TreeSampler::new(root).sample()
    );
    let (cpu, wall) = per_sample(root, 400, false);
    let (cpu_full, wall_full) = per_sample(root, 200, true);
    println!(
        "per sample, as the worker runs it (full /proc scan every 8th): {:.0} µs CPU, {:.0} µs wall",
        cpu * 1e6,
        wall * 1e6
    );
    println!("per sample, full /proc scan each time: {:.0} µs CPU, {:.0} µs wall", cpu_full * 1e6, wall_full * 1e6);

    let seconds = 20.0;
    let (cpu_loop, samples) = std::thread::spawn(move || {
        let mut sampler = TreeSampler::new(root);
        let (cpu0, wall0) = (thread_cpu(), Instant::now());
        let mut n = 0;
        while wall0.elapsed().as_secs_f64() < seconds {
            let _ = sampler.sample();
            n += 1;
            std::thread::sleep(INTERVAL);
        }
        (thread_cpu() - cpu0, n)
    })
    .join()
    .expect("sampler");
    println!(
        "a {} ms sampling loop for {seconds:.0} s: {samples} samples, {:.1} ms CPU in all: {:.3} % of one core, \
         {:.3} % of the machine",
        INTERVAL.as_millis(),
        cpu_loop * 1e3,
        100.0 * cpu_loop / seconds,
        100.0 * cpu_loop / seconds / cores as f64
    );
    let _ = tree.kill();
    let _ = tree.wait();
}
