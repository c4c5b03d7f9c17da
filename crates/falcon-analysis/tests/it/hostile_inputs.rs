//! Bounded on hostile input: decompression bombs (gzipped traces, deflated `.npz` members) stop at the cap on
//! decompressed bytes or at the first byte that cannot start a trace; FIFOs and devices are refused before
//! they are opened; a tensor directory is walked without leaving it and survives link loops.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use falcon_analysis::error::AnalysisError;
use falcon_analysis::input::{find_profiles, find_trace, load};
use falcon_analysis::limits::{Bounded, LimitExceeded};
use falcon_analysis::tensors::{compare_dumps, TensorOptions};
use falcon_analysis::timeline::chrome::{from_chrome_json, read_chrome_trace_file_with, ChromeTraceError};

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

fn gzip_stream(mut source: impl Read) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::copy(&mut source, &mut enc).unwrap();
    enc.finish().unwrap()
}

/// A reader that counts the bytes it hands out.
struct Counting<R> {
    inner: R,
    count: std::rc::Rc<std::cell::Cell<u64>>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.set(self.count.get() + n as u64);
        Ok(n)
    }
}

#[test]
fn zeros_fail_at_the_first_byte_without_reading_on() {
    // 1 GiB of zeros, never materialised: the reader stops within its first buffer.
    let count = std::rc::Rc::new(std::cell::Cell::new(0));
    let zeros = Counting { inner: std::io::repeat(0).take(1 << 30), count: count.clone() };
    let e = from_chrome_json(zeros).expect_err("zeros");
    assert!(matches!(e, ChromeTraceError::Syntax { position: Some(p), .. } if p.line == 1 && p.column == 1), "{e:?}");
    assert!(e.to_string().contains("byte 0x00"), "{e}");
    assert!(count.get() <= 4 << 20, "read {} bytes of zeros before failing", count.get());

    // The same as a gzipped file: refused at its first inflated byte, naming the file.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("zeros.trace.json.gz");
    std::fs::write(&path, gzip_stream(std::io::repeat(0).take(64 << 20))).unwrap();
    let e = read_chrome_trace_file_with(&path, u64::MAX).expect_err("gzipped zeros");
    assert_eq!(e.kind(), falcon_core::ErrorKind::Failure);
    let msg = e.to_string();
    assert!(msg.contains("zeros.trace.json.gz") && msg.contains("byte 0x00"), "{msg}");

    // An event that is not an object is refused at its first byte too (a long run of digits never ends).
    let count = std::rc::Rc::new(std::cell::Cell::new(0));
    let digits = Counting {
        inner: std::io::Cursor::new(b"{\"traceEvents\":[".to_vec()).chain(std::io::repeat(b'7').take(1 << 30)),
        count: count.clone(),
    };
    let e = from_chrome_json(digits).expect_err("a number as an event");
    assert!(matches!(e, ChromeTraceError::NotATrace { .. }) && e.to_string().contains("object"), "{e}");
    assert!(count.get() <= 4 << 20, "read {} bytes before failing", count.get());
}

#[test]
fn a_whitespace_bomb_stops_at_the_cap_naming_file_cap_and_flag() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bomb.trace.json.gz");
    let body = std::io::Cursor::new(b"{\"traceEvents\":[".to_vec()).chain(std::io::repeat(b' ').take(8 << 20));
    std::fs::write(&path, gzip_stream(body)).unwrap();
    let e = read_chrome_trace_file_with(&path, 2 << 20).expect_err("over the cap");
    assert!(matches!(e, AnalysisError::DecompressedTooLarge { limit, .. } if limit == 2 << 20), "{e:?}");
    assert_eq!(e.kind(), falcon_core::ErrorKind::Failure);
    let msg = e.to_string();
    for part in ["bomb.trace.json.gz", "2 MiB", "--max-decompressed", "max_decompressed_mib"] {
        assert!(msg.contains(part), "the message names {part}: {msg}");
    }
    assert!(e.hint().is_some_and(|h| h.contains("--max-decompressed")), "{:?}", e.hint());
}

#[test]
fn a_real_gzipped_trace_reads_at_exactly_its_size_and_fails_one_byte_below() {
    let gz = std::fs::read(data("jax_cpu_mlp_vm.trace.json.gz")).unwrap();
    let mut raw = Vec::new();
    flate2::read::MultiGzDecoder::new(&gz[..]).read_to_end(&mut raw).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.trace.json.gz");
    std::fs::write(&path, &gz).unwrap();
    let exact = read_chrome_trace_file_with(&path, raw.len() as u64).expect("a cap of exactly its size");
    assert!(exact.events_read > 0);
    let e = read_chrome_trace_file_with(&path, raw.len() as u64 - 1).expect_err("one byte short");
    assert!(matches!(e, AnalysisError::DecompressedTooLarge { .. }), "{e:?}");
    // A plain trace is not compressed: the cap does not apply.
    let plain = dir.path().join("t.trace.json");
    std::fs::write(&plain, &raw).unwrap();
    assert_eq!(read_chrome_trace_file_with(&plain, 1).expect("plain").events_read, exact.events_read);
}

#[test]
fn bounded_reader_errors_are_typed() {
    let mut r = Bounded::new(std::io::repeat(1), 10);
    let e = std::io::copy(&mut r, &mut std::io::sink()).unwrap_err();
    assert_eq!(LimitExceeded::in_io_error(&e), Some(10));
}

fn npy(elements: usize) -> Vec<u8> {
    let dict = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({elements},), }}");
    let mut header = dict.into_bytes();
    while !(10 + header.len() + 1).is_multiple_of(64) {
        header.push(b' ');
    }
    header.push(b'\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(&header);
    out.extend(std::iter::repeat_n(0u8, elements * 4));
    out
}

fn npz(path: &Path, members: &[(&str, Vec<u8>)]) {
    let mut z = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    for (name, bytes) in members {
        let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
        z.start_file(*name, opts).unwrap();
        z.write_all(bytes).unwrap();
    }
    z.finish().unwrap();
}

#[test]
fn npz_members_over_the_cap_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.npz");
    // Two deflated members of 1 MiB of zeros each (a few KiB compressed).
    npz(&a, &[("x.npy", npy(1 << 18)), ("y.npy", npy(1 << 18))]);
    let cap = |mib: u64| TensorOptions { max_decompressed_bytes: Some(mib << 20), ..Default::default() };
    let r = compare_dumps(&a, &a, &cap(4)).expect("under the cap");
    assert_eq!(r.tensors.len(), 2);
    let e = compare_dumps(&a, &a, &cap(1)).expect_err("2 MiB declared, 1 MiB cap");
    assert!(matches!(e, AnalysisError::DecompressedTooLarge { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(msg.contains("a.npz") && msg.contains("1 MiB") && msg.contains("--max-decompressed"), "{msg}");
}

#[test]
fn an_npz_member_that_inflates_past_its_declared_size_stops_at_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("liar.npz");
    // A 4-element tensor (128 + 16 bytes) followed by 1 MiB of zeros inside the same member.
    let mut member = npy(4);
    member.extend(std::iter::repeat_n(0u8, 1 << 20));
    npz(&a, &[("x.npy", member)]);
    // Rewrite the declared uncompressed size (local header and central directory) to the tensor's 144 bytes:
    // the member then inflates far past what it declares.
    let mut bytes = std::fs::read(&a).unwrap();
    let real = ((1u32 << 20) + 144).to_le_bytes();
    let mut patched = 0;
    for i in 0..bytes.len().saturating_sub(3) {
        if bytes[i..i + 4] == real {
            bytes[i..i + 4].copy_from_slice(&144u32.to_le_bytes());
            patched += 1;
        }
    }
    assert_eq!(patched, 2, "the size is in the local header and in the central directory");
    std::fs::write(&a, &bytes).unwrap();
    let opts = TensorOptions { max_decompressed_bytes: Some(64 << 10), ..Default::default() };
    // 144 bytes declared (under the cap, so the check at open passes): the zip reader (zip 9) refuses a member
    // larger than it declares; the bounded reader around it stops one at the cap should a reader not. Either
    // way it is never read whole.
    match compare_dumps(&a, &a, &opts) {
        Err(AnalysisError::DecompressedTooLarge { limit, .. }) => assert_eq!(limit, 64 << 10),
        Err(AnalysisError::Invalid(msg)) => assert!(msg.contains("liar.npz") && msg.contains("declared"), "{msg}"),
        other => panic!("a lying member must not be read whole: {other:?}"),
    }
}

#[cfg(unix)]
#[test]
fn tensor_directories_stay_inside_and_survive_link_loops() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("secret.npy"), npy(4)).unwrap();
    let root = dir.path().join("dump");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::write(root.join("w.npy"), npy(4)).unwrap();
    std::fs::write(root.join("sub/v.npy"), npy(4)).unwrap();
    symlink(&outside, root.join("out_dir")).unwrap();
    symlink(outside.join("secret.npy"), root.join("out_file.npy")).unwrap();
    symlink(root.join("w.npy"), root.join("alias.npy")).unwrap();
    // Two loops: without a visited set the walk would branch at every level.
    symlink(&root, root.join("sub/loop1")).unwrap();
    symlink(root.join("sub"), root.join("sub/loop2")).unwrap();
    let r = compare_dumps(&root, &root, &TensorOptions::default()).expect("the walk ends");
    let mut names: Vec<&str> = r.tensors.iter().map(|t| t.name.as_str()).collect();
    names.sort();
    assert_eq!(names, ["alias", "sub/v", "w"], "inside links are followed once, outside ones never");
    let note = r.notes.iter().find(|n| n.contains("symbolic link")).unwrap_or_else(|| panic!("{:?}", r.notes));
    assert!(note.contains("out_dir") && note.contains("out_file.npy") && note.starts_with("A:"), "{note}");
}

#[cfg(unix)]
#[test]
fn fifos_and_devices_are_refused_before_they_are_opened() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("in.xplane.pb");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let gz_fifo = dir.path().join("in.trace.json.gz");
    assert!(std::process::Command::new("mkfifo").arg(&gz_fifo).status().unwrap().success());
    // Each call would block forever on open (or read /dev/zero without end) if it got that far.
    for path in [fifo.as_path(), gz_fifo.as_path(), Path::new("/dev/zero")] {
        let e = find_profiles(path, None).expect_err("find_profiles");
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let e = find_trace(path, None).expect_err("find_trace");
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let e = load(path).expect_err("load");
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let e = read_chrome_trace_file_with(path, 1 << 20).expect_err("chrome");
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let e = compare_dumps(path, path, &TensorOptions::default()).expect_err("tensors");
        assert!(e.to_string().contains("not a regular file"), "{e}");
    }
}

#[test]
fn a_gzipped_trace_given_as_a_profile_is_named_for_what_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("zeros.trace.json.gz");
    std::fs::write(&path, gzip_stream(std::io::repeat(0).take(1 << 20))).unwrap();
    let e = load(&path).expect_err("gzip is not an XSpace");
    assert!(matches!(e, AnalysisError::NotAProfile { .. }) && e.to_string().contains("gzip"), "{e}");
}
