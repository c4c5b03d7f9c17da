//! The ArtifactStore suite, run on a local directory, the GCS emulator and an S3 server (moto) alike.

use falcon_core::config::{GcsConfig, S3Config};
use falcon_infra::{ArtifactStore, InfraError, PutMode};
use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;

fn sha(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

async fn put_get_stat_round_trip(store: ArtifactStore) {
    let key = "experiments/e-1/plugins/profile/run1/host0.xplane.pb";
    let data = b"\x0a\x05hello profile bytes".to_vec();
    let info = store.put_bytes(key, data.clone(), PutMode::Create).await.unwrap();
    assert_eq!(info.size, data.len() as u64);
    assert_eq!(info.sha256, sha(&data));
    assert_eq!(info.content_type, "application/x-protobuf");
    assert!(info.uri.ends_with(key) && info.uri == store.uri(key), "{}", info.uri);
    assert_eq!(store.key_of(&info.uri).as_deref(), Some(key));
    assert_eq!(store.get(key).await.unwrap().as_ref(), &data[..]);
    assert_eq!(store.get_verified(key, info.size, &info.sha256).await.unwrap().as_ref(), &data[..]);
    let meta = store.stat(key).await.unwrap();
    assert_eq!(meta.size, data.len() as u64);
    if store.uri(key).starts_with("gs://") || store.uri(key).starts_with("s3://") {
        assert!(meta.etag.as_deref().is_some_and(|e| !e.is_empty() && !e.contains('"')), "GCS and S3 report an etag");
    }
    assert!(store.exists(key).await.unwrap());
    store.delete(key).await.unwrap();
    assert!(!store.exists(key).await.unwrap());
    store.delete(key).await.unwrap();
}

async fn artifacts_are_immutable_unless_overwrite_is_asked(store: ArtifactStore) {
    let key = "experiments/e-2/metrics.jsonl";
    store.put_bytes(key, &b"{\"step\":1}\n"[..], PutMode::Create).await.unwrap();
    let err = store.put_bytes(key, &b"other"[..], PutMode::Create).await.unwrap_err();
    assert!(matches!(&err, InfraError::AlreadyExists { uri } if uri.ends_with(key)), "{err}");
    assert_eq!(store.get(key).await.unwrap().as_ref(), b"{\"step\":1}\n", "the refused write changed nothing");
    let info = store.put_bytes(key, &b"{\"step\":2}\n"[..], PutMode::Overwrite).await.unwrap();
    assert_eq!(store.get(key).await.unwrap().as_ref(), b"{\"step\":2}\n");
    assert_eq!(info.sha256, sha(b"{\"step\":2}\n"));
}

async fn streams_a_15_mb_file_and_verifies_it(store: ArtifactStore) {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("big.xplane.pb");
    let data: Vec<u8> = (0..15 * 1024 * 1024u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    std::fs::write(&src, &data).unwrap();
    let key = "experiments/e-3/plugins/profile/r/big.xplane.pb";
    let info = store.put_file(key, &src, PutMode::Create).await.unwrap();
    assert_eq!((info.size, info.sha256.as_str()), (data.len() as u64, sha(&data).as_str()));
    assert_eq!(store.stat(key).await.unwrap().size, data.len() as u64);
    let back = dir.path().join("back.pb");
    let fetched = store.get_to_file(key, &back).await.unwrap();
    assert_eq!(fetched.sha256, info.sha256);
    assert_eq!(std::fs::read(&back).unwrap(), data);
    assert_eq!(store.digest(key).await.unwrap(), info, "the digest of a stored object is what its put returned");
    let wrong = store.get_verified(key, info.size, &sha(b"something else")).await.unwrap_err();
    assert!(matches!(wrong, InfraError::Integrity { .. }), "{wrong}");
    let short = store.get_verified(key, info.size + 1, &info.sha256).await.unwrap_err();
    assert!(short.to_string().contains("bytes"), "{short}");
}

async fn readers_never_see_a_partial_object(store: ArtifactStore) {
    let key = "experiments/e-4/logs/1/proc.log";
    let (mut tx, rx) = tokio::io::duplex(64 * 1024);
    let writer = {
        let store = store.clone();
        tokio::spawn(async move { store.put_reader(key, rx, PutMode::Create).await })
    };
    let chunk = vec![b'x'; 512 * 1024];
    for _ in 0..4 {
        tx.write_all(&chunk).await.unwrap();
    }
    assert!(!store.exists(key).await.unwrap(), "2 MiB written, not finished: nothing visible yet");
    assert!(store.list("experiments/e-4/").await.unwrap().is_empty());
    tx.write_all(&chunk).await.unwrap();
    drop(tx);
    let info = writer.await.unwrap().unwrap();
    assert_eq!(info.size, 5 * 512 * 1024);
    assert_eq!(store.stat(key).await.unwrap().size, info.size);
}

async fn racing_creates_of_one_key_leave_exactly_one_winner(store: ArtifactStore) {
    // Both writers are past the existence check before either finishes (each has had more than its pipe's
    // buffer read), so only the conditional write itself can refuse the loser. S3 enforces it (`If-None-Match:
    // *` on PutObject and CompleteMultipartUpload). Known gaps, checked more weakly here: the local backend
    // tests for the target only when the write opens and then renames over it, and fake-gcs-server ignores
    // `ifGenerationMatch=0` (real GCS honours it).
    let enforced = store.uri("k").starts_with("s3://");
    let key = "experiments/e-9/result.json";
    let mut pipes = Vec::new();
    let mut writers = Vec::new();
    for _ in 0..2 {
        let (tx, rx) = tokio::io::duplex(1024);
        let store = store.clone();
        writers.push(tokio::spawn(async move { store.put_reader(key, rx, PutMode::Create).await }));
        pipes.push(tx);
    }
    for (i, tx) in pipes.iter_mut().enumerate() {
        tx.write_all(&vec![b'a' + i as u8; 8 * 1024]).await.unwrap();
    }
    drop(pipes);
    let mut won = Vec::new();
    for (i, writer) in writers.into_iter().enumerate() {
        match writer.await.unwrap() {
            Ok(info) => won.push(info.sha256),
            Err(InfraError::AlreadyExists { uri }) => assert!(uri.ends_with(key), "{uri}"),
            Err(e) => panic!("writer {i}: {e}"),
        }
    }
    if enforced {
        assert_eq!(won.len(), 1, "exactly one racing create wins");
    } else {
        assert!(!won.is_empty(), "some racing create wins");
    }
    let stored = sha(&store.get(key).await.unwrap());
    assert!(won.contains(&stored), "the stored bytes are a winner's whole write");
}

async fn a_failed_stream_leaves_nothing(store: ArtifactStore) {
    struct Failing(usize);
    impl tokio::io::AsyncRead for Failing {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            if self.0 == 0 {
                return std::task::Poll::Ready(Err(std::io::Error::other("disk went away")));
            }
            self.0 -= 1;
            buf.put_slice(&[7u8; 4096]);
            std::task::Poll::Ready(Ok(()))
        }
    }
    let key = "experiments/e-5/profile.xplane.pb";
    // 12 MB before the failure: more than two of S3's 5 MiB parts, so a multipart upload is under way and must be
    // aborted.
    let err = store.put_reader(key, Failing(3000), PutMode::Create).await.unwrap_err();
    assert!(err.to_string().contains("disk went away"), "{err}");
    assert!(!store.exists(key).await.unwrap());
    assert!(store.list("").await.unwrap().is_empty(), "no partial object and no staging leftovers are listed");
    store.put_bytes(key, &b"retry works"[..], PutMode::Create).await.unwrap();
}

async fn lists_recursively_by_prefix_and_deletes_by_prefix(store: ArtifactStore) {
    let keys = [
        "experiments/e-6/a.json",
        "experiments/e-6/plugins/profile/r/h1.xplane.pb",
        "experiments/e-6/plugins/profile/r/h2.xplane.pb",
        "experiments/e-60/other.json",
        "experiments/e-7/x.txt",
    ];
    for k in keys {
        store.put_bytes(k, k.as_bytes().to_vec(), PutMode::Create).await.unwrap();
    }
    let listed: Vec<_> = store.list("experiments/e-6").await.unwrap().into_iter().map(|m| (m.key, m.size)).collect();
    assert_eq!(
        listed,
        keys[..3].iter().map(|k| (k.to_string(), k.len() as u64)).collect::<Vec<_>>(),
        "the prefix is a folder: e-60 is not under e-6"
    );
    assert_eq!(store.list("").await.unwrap().len(), 5);
    assert!(store.list("experiments/none/").await.unwrap().is_empty());
    assert_eq!(store.delete_prefix("experiments/e-6/").await.unwrap(), 3);
    let left: Vec<_> = store.list("").await.unwrap().into_iter().map(|m| m.key).collect();
    assert_eq!(left, ["experiments/e-60/other.json", "experiments/e-7/x.txt"]);
    assert!(store.delete_prefix("").await.is_err(), "deleting everything is refused");
}

async fn unsafe_keys_are_refused_before_any_io(store: ArtifactStore) {
    for key in ["../escape", "/etc/passwd", "a/../../b", "a//b", "", "bad\u{7}bell", "dir/"] {
        let err = store.put_bytes(key, &b"x"[..], PutMode::Create).await.unwrap_err();
        assert!(matches!(err, InfraError::InvalidKey { .. }), "{key:?}: {err}");
        assert!(matches!(store.get(key).await.unwrap_err(), InfraError::InvalidKey { .. }));
    }
    assert!(matches!(store.list("../").await.unwrap_err(), InfraError::InvalidKey { .. }));
    assert!(store.list("").await.unwrap().is_empty());
}

async fn ranges_read_part_of_an_object(store: ArtifactStore) {
    let key = "experiments/e-9/logs/1/stdout.log";
    store.put_bytes(key, &b"0123456789"[..], PutMode::Create).await.unwrap();
    assert_eq!(store.get_range(key, 2..5).await.unwrap().as_ref(), b"234");
    assert_eq!(store.get_range(key, 7..100).await.unwrap().as_ref(), b"789", "a range past the end is cut");
    assert!(store.get_range(key, 10..20).await.unwrap().is_empty(), "from the end: nothing");
    assert!(store.get_range(key, 5..5).await.unwrap().is_empty());
    assert!(matches!(store.get_range("experiments/e-9/none", 0..1).await, Err(InfraError::ObjectNotFound { .. })));
}

async fn missing_objects_are_not_found(store: ArtifactStore) {
    let err = store.get("experiments/e-8/nope.json").await.unwrap_err();
    assert!(matches!(&err, InfraError::ObjectNotFound { uri } if uri.ends_with("nope.json")), "{err}");
    assert_eq!(err.kind(), falcon_core::ErrorKind::NotFound);
    assert!(matches!(store.stat("experiments/e-8/nope.json").await.unwrap_err(), InfraError::ObjectNotFound { .. }));
}

on_every_object_store!(
    put_get_stat_round_trip,
    ranges_read_part_of_an_object,
    artifacts_are_immutable_unless_overwrite_is_asked,
    streams_a_15_mb_file_and_verifies_it,
    readers_never_see_a_partial_object,
    racing_creates_of_one_key_leave_exactly_one_winner,
    a_failed_stream_leaves_nothing,
    lists_recursively_by_prefix_and_deletes_by_prefix,
    unsafe_keys_are_refused_before_any_io,
    missing_objects_are_not_found,
);

#[tokio::test]
async fn memory_backend_behaves_like_the_others() {
    let store = ArtifactStore::memory();
    let info = store.put_bytes("a/b.json", &b"{}"[..], PutMode::Create).await.unwrap();
    assert_eq!(info.uri, "memory://a/b.json");
    assert!(matches!(
        store.put_bytes("a/b.json", &b"{}"[..], PutMode::Create).await,
        Err(InfraError::AlreadyExists { .. })
    ));
    assert_eq!(store.list("a").await.unwrap().len(), 1);
}

/// `memory://NAME` is one store for every opening in the process (an application's EXP and analysis each open it);
/// `memory://` is a new one each time, and another name another store.
#[tokio::test]
async fn a_named_memory_store_is_shared_by_its_openings() {
    let open = |uri: &str| ArtifactStore::open(uri, &GcsConfig::default(), &S3Config::default()).unwrap();
    let (one, again, other) = (open("memory://shared-test"), open("memory://shared-test"), open("memory://other-test"));
    let info = one.put_bytes("e-1/metrics.jsonl", &b"{}"[..], PutMode::Create).await.unwrap();
    assert_eq!(info.uri, "memory://shared-test/e-1/metrics.jsonl");
    assert_eq!(&again.get("e-1/metrics.jsonl").await.unwrap()[..], b"{}");
    assert!(!other.exists("e-1/metrics.jsonl").await.unwrap());
    assert!(!open("memory://").exists("e-1/metrics.jsonl").await.unwrap());
    assert!(ArtifactStore::open("memory://Upper", &GcsConfig::default(), &S3Config::default()).is_err());
}

#[tokio::test]
async fn a_dead_gcs_endpoint_is_a_clear_error() {
    let gcs = falcon_core::config::GcsConfig {
        endpoint: Some("http://127.0.0.1:1".into()),
        anonymous: true,
        credential_path: None,
    };
    let store = ArtifactStore::open("gs://bucket/p", &gcs, &Default::default()).unwrap();
    let err = store.put_bytes("k", &b"x"[..], PutMode::Create).await.unwrap_err().to_string();
    assert!(err.contains("gs://bucket/p/k"), "{err}");
}

#[tokio::test]
async fn a_dead_s3_endpoint_is_a_clear_error() {
    let s3 = falcon_core::config::S3Config {
        endpoint: Some("http://127.0.0.1:1".into()),
        access_key_id: Some("k".into()),
        secret_access_key: Some("s".into()),
        ..Default::default()
    };
    let store = ArtifactStore::open("s3://bucket/p", &Default::default(), &s3).unwrap();
    let err = store.put_bytes("k", &b"x"[..], PutMode::Create).await.unwrap_err().to_string();
    assert!(err.contains("s3://bucket/p/k"), "{err}");
}

#[test]
fn s3_keys_come_in_pairs() {
    let s3 = falcon_core::config::S3Config { access_key_id: Some("k".into()), ..Default::default() };
    let err = ArtifactStore::open("s3://bucket/p", &Default::default(), &s3).unwrap_err().to_string();
    assert!(err.contains("access_key_id and secret_access_key"), "{err}");
}

#[test]
fn an_unwritable_local_root_fails_at_open() {
    let file = tempfile::NamedTempFile::new().unwrap();
    let under_a_file = file.path().join("arts");
    let err =
        ArtifactStore::open(&under_a_file.display().to_string(), &Default::default(), &Default::default()).unwrap_err();
    assert!(err.to_string().contains(&under_a_file.display().to_string()), "{err}");
}
