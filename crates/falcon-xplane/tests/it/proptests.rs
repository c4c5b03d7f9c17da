//! `decode` never panics: on arbitrary bytes, and on a real capture with random byte flips.

use falcon_xplane::decode;
use proptest::prelude::*;

fn fixture() -> &'static [u8] {
    static BYTES: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    BYTES.get_or_init(|| {
        std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/jax_cpu_mlp_vm.xplane.pb")).unwrap()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        if let Err(e) = decode(&bytes) {
            prop_assert!(e.offset().unwrap() <= bytes.len());
        }
    }

    #[test]
    fn fixture_with_byte_flips_never_panics(
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<prop::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        let mut bytes = fixture().to_vec();
        for (at, value) in flips {
            let i = at.index(bytes.len());
            bytes[i] = value;
        }
        if truncate {
            bytes.truncate(cut.index(bytes.len()));
        }
        if let Err(e) = decode(&bytes) {
            prop_assert!(e.offset().unwrap() <= bytes.len());
        }
    }
}
