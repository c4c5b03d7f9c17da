//! Bounded on hostile input (issue 15 §3), as a user and the worker meet it: gzip bombs given as traces fail
//! at once with exit 1; the cap on decompressed bytes names the file, the cap and the flag, and is raised by
//! `--max-decompressed` or `[analysis] max_decompressed_mib`; FIFOs and devices given to the profile commands
//! are refused as "not a regular file"; a bomb written by a workload is recorded as an analysis failure while
//! the experiment completes.

use crate::common::{code, falcon, json};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../falcon-analysis/tests/data").join(name)
}

fn gzip(bytes: impl Read) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut bytes = bytes;
    std::io::copy(&mut bytes, &mut enc).unwrap();
    enc.finish().unwrap()
}

fn error_of(out: &std::process::Output) -> serde_json::Value {
    json(out)["error"].clone()
}

/// A real trace (the JAX CPU fixture, 0.3 MB) with 2 MiB of whitespace after its first `{`: valid, and
/// inflating to about 2.3 MiB.
fn padded_trace(dir: &Path) -> PathBuf {
    let mut raw = Vec::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(data("jax_cpu_mlp_vm.trace.json.gz")).unwrap())
        .read_to_end(&mut raw)
        .unwrap();
    let at = raw.iter().position(|&b| b == b'{').unwrap() + 1;
    let mut padded = raw[..at].to_vec();
    padded.extend(std::iter::repeat_n(b' ', 2 << 20));
    padded.extend_from_slice(&raw[at..]);
    let path = dir.join("padded.trace.json.gz");
    std::fs::write(&path, gzip(&padded[..])).unwrap();
    path
}

#[test]
fn gzipped_zeros_fail_at_once_on_every_command_that_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let bomb = dir.path().join("zeros.trace.json.gz");
    // 64 MiB of zeros, 64 KiB gzipped (the measured 300 MB case is in docs/PERFORMANCE.md).
    std::fs::write(&bomb, gzip(std::io::repeat(0).take(64 << 20))).unwrap();
    let f = bomb.to_str().unwrap();
    let out = falcon(dir.path(), &["profile", "trace", f, "--json"]);
    assert_eq!(code(&out), 1, "{}", String::from_utf8_lossy(&out.stdout));
    let message = error_of(&out)["message"].as_str().unwrap().to_string();
    assert!(message.contains("zeros.trace.json.gz") && message.contains("byte 0x00"), "{message}");
    // analyze and compare read Chrome traces too (PyTorch GPU traces): the trace reader's error, at byte 0.
    // export-trace converts XProf profiles only: it says the file is gzip, not an XSpace.
    for (args, says) in [
        (vec!["profile", "analyze", f, "--json"], "byte 0x00"),
        (vec!["profile", "compare", f, f, "--json"], "byte 0x00"),
        (vec!["profile", "export-trace", f, "-o", "out.json", "--json"], "gzip"),
    ] {
        let out = falcon(dir.path(), &args);
        assert_eq!(code(&out), 1, "{args:?}: {}", String::from_utf8_lossy(&out.stdout));
        let message = error_of(&out)["message"].as_str().unwrap().to_string();
        assert!(message.contains("zeros.trace.json.gz") && message.contains(says), "{args:?}: {message}");
    }
    assert!(!dir.path().join("out.json").exists(), "nothing was written");
}

#[test]
fn the_cap_names_file_cap_and_flag_and_the_flag_or_the_config_key_raises_it() {
    let dir = tempfile::tempdir().unwrap();
    let trace = padded_trace(dir.path());
    let t = trace.to_str().unwrap();
    let out = falcon(dir.path(), &["profile", "trace", t, "--json"]);
    assert_eq!(code(&out), 0, "under the default cap: {}", String::from_utf8_lossy(&out.stdout));
    let events = json(&out)["events_read"].as_u64().unwrap();
    assert!(events > 0);

    let out = falcon(dir.path(), &["profile", "trace", t, "--max-decompressed", "1", "--json"]);
    assert_eq!(code(&out), 1);
    let e = error_of(&out);
    let message = e["message"].as_str().unwrap();
    for part in ["padded.trace.json.gz", "more than 1 MiB", "--max-decompressed", "max_decompressed_mib"] {
        assert!(message.contains(part), "the message names {part}: {message}");
    }
    assert_eq!(e["code"], "failure");
    assert!(e["hint"].as_str().is_some_and(|h| h.contains("--max-decompressed")), "{e}");
    let out = falcon(dir.path(), &["profile", "trace", t, "--max-decompressed", "4", "--json"]);
    assert_eq!(json(&out)["events_read"].as_u64(), Some(events), "a 4 MiB cap holds it");

    // The config key (what the worker reads), and the flag over it.
    std::fs::write(dir.path().join("falcon.toml"), "[analysis]\nmax_decompressed_mib = 1\n").unwrap();
    let out = falcon(dir.path(), &["profile", "trace", t, "--json"]);
    assert_eq!(code(&out), 1);
    assert!(error_of(&out)["message"].as_str().unwrap().contains("more than 1 MiB"), "{}", error_of(&out));
    let out = falcon(dir.path(), &["profile", "trace", t, "--max-decompressed", "4", "--json"]);
    assert_eq!(code(&out), 0, "the flag beats the file: {}", String::from_utf8_lossy(&out.stdout));

    let out = falcon(dir.path(), &["profile", "trace", t, "--max-decompressed", "0", "--json"]);
    assert_eq!(code(&out), 2, "a zero cap is a usage error");
}

#[test]
fn an_npz_over_the_cap_fails_naming_the_cap_and_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let npz = dir.path().join("big.npz");
    let dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (524288,), }";
    let mut header = dict.as_bytes().to_vec();
    while !(10 + header.len() + 1).is_multiple_of(64) {
        header.push(b' ');
    }
    header.push(b'\n');
    let mut npy = b"\x93NUMPY\x01\x00".to_vec();
    npy.extend_from_slice(&(header.len() as u16).to_le_bytes());
    npy.extend_from_slice(&header);
    npy.extend(std::iter::repeat_n(0u8, 524288 * 4));
    std::fs::write(&npz, deflated_zip("t.npy", &npy)).unwrap();
    let p = npz.to_str().unwrap();
    let out = falcon(dir.path(), &["accuracy", "tensors", p, p, "--max-decompressed", "1", "--json"]);
    assert_eq!(code(&out), 1, "{}", String::from_utf8_lossy(&out.stdout));
    let message = error_of(&out)["message"].as_str().unwrap().to_string();
    assert!(
        message.contains("big.npz") && message.contains("1 MiB") && message.contains("--max-decompressed"),
        "{message}"
    );
    let out = falcon(dir.path(), &["accuracy", "tensors", p, p, "--json"]);
    assert_eq!(code(&out), 0, "the default cap holds 2 MiB: {}", String::from_utf8_lossy(&out.stdout));
}

/// A zip archive with one deflated member (what `np.savez_compressed` writes), built by hand.
fn deflated_zip(name: &str, content: &[u8]) -> Vec<u8> {
    let crc = {
        let mut c = !0u32;
        for &b in content {
            c ^= u32::from(b);
            for _ in 0..8 {
                c = if c & 1 != 0 { (c >> 1) ^ 0xedb8_8320 } else { c >> 1 };
            }
        }
        !c
    };
    let mut enc = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(content).unwrap();
    let packed = enc.finish().unwrap();
    let (csize, usize_, nlen) = (packed.len() as u32, content.len() as u32, name.len() as u16);
    let mut out = Vec::new();
    let common = |out: &mut Vec<u8>| {
        for v in [20u16, 0, 8, 0, 0] {
            out.extend_from_slice(&v.to_le_bytes()); // version needed, flags, deflate, time, date
        }
        for v in [crc, csize, usize_] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&nlen.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes()); // extra length
    };
    out.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
    common(&mut out);
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(&packed);
    let cd_start = out.len() as u32;
    out.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
    out.extend_from_slice(&20u16.to_le_bytes()); // version made by
    common(&mut out);
    for v in [0u16, 0, 0] {
        out.extend_from_slice(&v.to_le_bytes()); // comment length, disk, internal attributes
    }
    out.extend_from_slice(&0u32.to_le_bytes()); // external attributes
    out.extend_from_slice(&0u32.to_le_bytes()); // local header offset
    out.extend_from_slice(name.as_bytes());
    let cd_len = out.len() as u32 - cd_start;
    out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    for v in [0u16, 0, 1, 1] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&cd_len.to_le_bytes());
    out.extend_from_slice(&cd_start.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

#[cfg(unix)]
#[test]
fn fifos_and_devices_given_to_the_profile_commands_are_not_regular_files() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("in.xplane.pb");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let fifo = fifo.display().to_string();
    for input in [fifo.as_str(), "/dev/zero"] {
        for args in [
            vec!["profile", "analyze", input, "--json"],
            vec!["profile", "trace", input, "--json"],
            vec!["profile", "compare", input, input, "--json"],
            vec!["profile", "export-trace", input, "-o", "out.json", "--json"],
            vec!["profile", "fetch", input, "--json"],
        ] {
            let out = falcon(dir.path(), &args);
            assert_eq!(code(&out), 1, "{args:?}: {}", String::from_utf8_lossy(&out.stdout));
            let message = error_of(&out)["message"].as_str().unwrap().to_string();
            assert!(message.contains("not a regular file") && message.contains(input), "{args:?}: {message}");
        }
    }
}

#[test]
fn a_bomb_written_by_a_workload_is_an_analysis_failure_and_the_experiment_completes() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(code(&falcon(dir.path(), &["init"])), 0);
    // The worker's cap comes from falcon.toml: 1 MiB here, so the whitespace bomb (8 MiB inflated) meets it.
    let toml = dir.path().join("falcon.toml");
    let mut text = std::fs::read_to_string(&toml).unwrap();
    text.push_str("\n[analysis]\nmax_decompressed_mib = 1\n");
    std::fs::write(&toml, text).unwrap();
    let cases = [
        ("zeros", "head -c 67108864 /dev/zero | gzip -1 > $FALCON_ARTIFACT_DIR/zeros.trace.json.gz", "byte 0x00"),
        (
            "spaces",
            "(printf %s \"{\\\"traceEvents\\\":[\"; head -c 8388608 /dev/zero | tr \"\\\\0\" \" \") | gzip -1 > $FALCON_ARTIFACT_DIR/spaces.trace.json.gz",
            "more than 1 MiB",
        ),
    ];
    for (name, command, expected) in cases {
        let spec = dir.path().join(format!("{name}.yaml"));
        std::fs::write(
            &spec,
            format!(
                "name: {name}\nscenario: benchmark\nworkload:\n  framework: shell\n  command: [sh, -c, '{command}']\nresources: {{accelerator: cpu}}\n"
            ),
        )
        .unwrap();
        let out = falcon(dir.path(), &["exp", "submit", spec.to_str().unwrap(), "--wait", "--json"]);
        assert_eq!(code(&out), 0, "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let shown = json(&out);
        assert_eq!(shown["status"], "COMPLETED", "{name}: {shown}");
        let rows = shown["analysis"].as_array().unwrap_or_else(|| panic!("{name}: no analysis rows: {shown}"));
        let row = rows.iter().find(|r| r["tool"] == "trace").unwrap_or_else(|| panic!("{name}: {shown}"));
        let error = row["details"]["error"].as_str().unwrap_or_else(|| panic!("{name}: no error: {row}"));
        assert!(error.contains(&format!("{name}.trace.json.gz")) && error.contains(expected), "{name}: {error}");
        if name == "spaces" {
            assert!(error.contains("--max-decompressed") && error.contains("max_decompressed_mib"), "{error}");
        }
    }
}
