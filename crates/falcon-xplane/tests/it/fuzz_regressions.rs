//! Inputs the fuzzer (`scripts/fuzz.sh`, target `decode`) reported, kept as regression tests. Each
//! is decoded as the fuzz target does: on one thread and on several, which must agree, without a panic.

use std::path::PathBuf;

use falcon_xplane::{decode_with, DecodeError, DecodeOptions};

fn input(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/fuzz").join(name);
    std::fs::read(path).unwrap()
}

fn decode_both(bytes: &[u8]) -> Result<(), DecodeError> {
    let one = decode_with(bytes, &DecodeOptions::default().threads(1));
    let many = decode_with(bytes, &DecodeOptions::default().threads(3).min_parallel_bytes(0));
    assert_eq!(
        one.as_ref().map(|_| ()).map_err(|e| format!("{e:?}")),
        many.as_ref().map(|_| ()).map_err(|e| format!("{e:?}"))
    );
    one.map(|_| ())
}

/// The first two fuzz runs stopped on these inputs with LeakSanitizer reports: 32 bytes from glibc's
/// `__cxa_thread_atexit_impl` and 48 bytes from `std::thread::Thread::new`, both owned by a worker
/// thread of `lines_in_parallel`. `std::thread::scope` returned once the workers' closures had
/// finished, but before the threads had exited and freed their thread-locals, so a leak check right
/// after `decode` could see them; the decoder now joins its workers explicitly. Both inputs decode
/// to an error, the same on one thread and on three.
#[test]
fn worker_threads_are_joined_before_decode_returns() {
    let err = decode_both(&input("thread_tls_leak_report.bin")).unwrap_err();
    assert!(matches!(err, DecodeError::VarintOverflow { offset: 22 }), "{err}");
    let err = decode_both(&input("thread_handle_leak_report.bin")).unwrap_err();
    assert!(err.offset().is_some(), "{err}");
}
