//! Decodes `*.xplane.pb` files and prints what is in them, how long decoding took and the process's
//! peak resident memory: the decoder's measuring tool (and the stand-in for `falcon profile analyze`
//! in `bench/xprof/run.sh` until that command exists).
//!
//!     cargo run --release -p falcon-xplane --example decode_stats -- FILE... [--repeat N] [--json]
//!         [--threads N] [--no-mmap] [--skip-stats NAME,NAME...]
//!
//! `--repeat N` decodes each file N times in this process and prints the fastest (warm page cache, warm
//! allocator); the default is one cold decode. Peak RSS is `VmHWM` from `/proc/self/status` (Linux).
//! `--threads`, `--no-mmap` and `--skip-stats` set the matching [`DecodeOptions`].

use std::time::Instant;

use falcon_xplane::{decode_file_with, DecodeOptions, StatValue, XSpace};

#[derive(Default)]
struct Counts {
    planes: usize,
    lines: usize,
    events: usize,
    event_stats: usize,
    event_metadata: usize,
    stat_metadata: usize,
    metadata_stats: usize,
    plane_stats: usize,
    compressed_strs: usize,
    string_bytes: usize,
}

fn count(space: &XSpace) -> Counts {
    let mut c = Counts { planes: space.planes.len(), ..Counts::default() };
    let value = |v: &StatValue| match v {
        StatValue::Str(s) => s.len(),
        StatValue::Bytes(b) | StatValue::CompressedStr(b) => b.len(),
        _ => 0,
    };
    let mut string_bytes = 0usize;
    let mut compressed = 0usize;
    for p in &space.planes {
        c.lines += p.lines.len();
        c.event_metadata += p.event_metadata.len();
        c.stat_metadata += p.stat_metadata.len();
        c.plane_stats += p.stats.len();
        string_bytes += p.name.len();
        for m in p.event_metadata.values() {
            c.metadata_stats += m.stats.len();
            string_bytes += m.name.len() + m.display_name.len() + m.metadata.len();
            for s in &m.stats {
                string_bytes += value(&s.value);
                compressed += usize::from(matches!(s.value, StatValue::CompressedStr(_)));
            }
        }
        for m in p.stat_metadata.values() {
            string_bytes += m.name.len() + m.description.len();
        }
        for l in &p.lines {
            c.events += l.events.len();
            string_bytes += l.name.len() + l.display_name.len();
            for e in &l.events {
                c.event_stats += e.stats.len();
                for s in &e.stats {
                    string_bytes += value(&s.value);
                    compressed += usize::from(matches!(s.value, StatValue::CompressedStr(_)));
                }
            }
        }
    }
    c.string_bytes = string_bytes;
    c.compressed_strs = compressed;
    c
}

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() {
    let mut files = Vec::new();
    let mut repeat = 1usize;
    let mut json = false;
    let mut threads = 0usize;
    let mut mmap = true;
    let mut skip: Vec<String> = Vec::new();
    let usage = || -> ! {
        eprintln!(
            "usage: decode_stats FILE... [--repeat N] [--json] [--threads N] [--no-mmap] [--skip-stats NAME,NAME...]"
        );
        std::process::exit(2)
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--repeat" => {
                repeat = args.next().and_then(|n| n.parse().ok()).filter(|&n| n >= 1).unwrap_or_else(|| {
                    eprintln!("--repeat needs a positive integer");
                    std::process::exit(2)
                })
            }
            "--json" => json = true,
            "--threads" => threads = args.next().and_then(|n| n.parse().ok()).unwrap_or_else(|| usage()),
            "--no-mmap" => mmap = false,
            "--skip-stats" => skip = args.next().unwrap_or_else(|| usage()).split(',').map(str::to_owned).collect(),
            "-h" | "--help" => usage(),
            _ => files.push(a),
        }
    }
    if files.is_empty() {
        usage();
    }
    let skip: Vec<&str> = skip.iter().map(String::as_str).collect();
    let options = DecodeOptions::default().threads(threads).mmap(mmap).skip_stats(&skip);
    let mut failed = false;
    for f in &files {
        let size = std::fs::metadata(f).map(|m| m.len()).unwrap_or(0);
        let mut best = f64::INFINITY;
        let mut space = None;
        for _ in 0..repeat {
            drop(space.take());
            let start = Instant::now();
            match decode_file_with(f, &options) {
                Ok(s) => {
                    best = best.min(start.elapsed().as_secs_f64());
                    space = Some(s);
                }
                Err(e) => {
                    eprintln!("{f}: {e}");
                    failed = true;
                    break;
                }
            }
        }
        let Some(space) = space else { continue };
        let c = count(&space);
        let rss = peak_rss_kib().unwrap_or(0);
        if json {
            println!(
                "{{\"file\":{f:?},\"bytes\":{size},\"decode_s\":{best:.6},\"peak_rss_kib\":{rss},\"planes\":{},\"lines\":{},\"events\":{},\"event_stats\":{},\"event_metadata\":{},\"stat_metadata\":{},\"metadata_stats\":{},\"plane_stats\":{},\"compressed_strs\":{},\"string_bytes\":{}}}",
                c.planes, c.lines, c.events, c.event_stats, c.event_metadata, c.stat_metadata,
                c.metadata_stats, c.plane_stats, c.compressed_strs, c.string_bytes
            );
        } else {
            println!(
                "{f}: {size} bytes, decoded in {:.1} ms, peak RSS {:.1} MiB\n  planes {} lines {} events {} event stats {} event metadata {} stat metadata {} metadata stats {} plane stats {} compressed strs {} string/bytes payload {} bytes",
                best * 1e3,
                rss as f64 / 1024.0,
                c.planes, c.lines, c.events, c.event_stats, c.event_metadata, c.stat_metadata,
                c.metadata_stats, c.plane_stats, c.compressed_strs, c.string_bytes
            );
        }
    }
    if failed {
        std::process::exit(1);
    }
}
