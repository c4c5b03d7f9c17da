//! Test harness: real backends only. Every MetaStore test runs on a fresh SQLite file and on a fresh MariaDB
//! database (dropped afterwards); every ArtifactStore test runs on a local directory, on the GCS emulator and on
//! an S3 server (moto).
//! A backend that is not reachable fails the test with instructions — it is never skipped.

#![allow(dead_code, reason = "each test file uses its own subset of the helpers")]

use falcon_core::config::{GcsConfig, S3Config};
use falcon_infra::{ArtifactStore, MetaStore};
use std::future::Future;

/// The MariaDB server the tests create their databases on.
pub fn mysql_server_url() -> String {
    std::env::var("FALCON_TEST_MYSQL_URL").unwrap_or_else(|_| "mysql://root@127.0.0.1:3306".into())
}

/// Runs `test` on a new SQLite store in a temporary folder.
pub async fn with_sqlite<F, Fut>(test: F)
where
    F: FnOnce(MetaStore) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("meta.db").display());
    let store = MetaStore::create(&url).await.expect("create a SQLite store");
    let outcome = tokio::spawn(test(store.clone())).await;
    store.close().await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic.into_panic());
    }
}

/// Runs `test` on a new MariaDB database, dropped afterwards whether the test passed or not.
pub async fn with_mysql<F, Fut>(test: F)
where
    F: FnOnce(MetaStore) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let server = mysql_server_url();
    let db = format!("falcon_test_{}", uuid::Uuid::new_v4().simple());
    let url = format!("{}/{db}", server.trim_end_matches('/'));
    let store = MetaStore::create(&url).await.unwrap_or_else(|e| {
        panic!(
            "MariaDB is needed for this test and is not usable at {server}: {e}\n\
             Start the test services with `scripts/test.sh` (or `scripts/services.sh up`), or point \
             FALCON_TEST_MYSQL_URL at a server."
        )
    });
    let outcome = tokio::spawn(test(store.clone())).await;
    store.close().await;
    use sqlx::migrate::MigrateDatabase;
    sqlx::MySql::drop_database(&url).await.expect("drop the test database");
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic.into_panic());
    }
}

/// Generates one `#[tokio::test]` per backend for each listed `async fn(MetaStore)`.
#[macro_export]
macro_rules! on_both_databases {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $name() { $crate::common::with_sqlite(super::$name).await })*
        }
        mod mariadb {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $name() { $crate::common::with_mysql(super::$name).await })*
        }
    };
}

/// The GCS emulator's endpoint.
pub fn gcs_endpoint() -> String {
    std::env::var("FALCON_TEST_GCS_ENDPOINT").unwrap_or_else(|_| {
        panic!(
            "the GCS emulator is needed for this test: FALCON_TEST_GCS_ENDPOINT is not set.\n\
             Run the tests with `scripts/test.sh`, which starts fake-gcs-server on loopback and sets it."
        )
    })
}

/// The S3-compatible server's endpoint (moto).
pub fn s3_endpoint() -> String {
    std::env::var("FALCON_TEST_S3_ENDPOINT").unwrap_or_else(|_| {
        panic!(
            "the S3 server is needed for this test: FALCON_TEST_S3_ENDPOINT is not set.\n\
             Run the tests with `scripts/test.sh`, which starts moto_server on loopback and sets it."
        )
    })
}

/// A store on a local temporary folder (kept alive by the returned guard).
pub fn local_store() -> (ArtifactStore, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = ArtifactStore::open(
        &dir.path().join("arts").display().to_string(),
        &GcsConfig::default(),
        &S3Config::default(),
    )
    .expect("open local store");
    (store, dir)
}

/// A store on a new bucket of the GCS emulator, under a two-level prefix.
pub async fn gcs_store() -> ArtifactStore {
    let endpoint = gcs_endpoint();
    let bucket = format!("falcon-test-{}", uuid::Uuid::new_v4().simple());
    let created = reqwest::Client::new()
        .post(format!("{endpoint}/storage/v1/b"))
        .json(&serde_json::json!({ "name": bucket }))
        .send()
        .await
        .unwrap_or_else(|e| panic!("the GCS emulator at {endpoint} does not answer: {e}"));
    assert!(created.status().is_success(), "creating bucket {bucket}: {}", created.status());
    let gcs = GcsConfig { endpoint: Some(endpoint), anonymous: true, credential_path: None };
    ArtifactStore::open(&format!("gs://{bucket}/runs/prod"), &gcs, &S3Config::default()).expect("open GCS store")
}

/// A store on a new bucket of the S3 server, under a two-level prefix, with signed requests (moto accepts any
/// keys, but refuses unsigned reads of objects as S3 does).
pub async fn s3_store() -> ArtifactStore {
    let endpoint = s3_endpoint();
    let bucket = format!("falcon-test-{}", uuid::Uuid::new_v4().simple());
    // CreateBucket: moto takes it unsigned; no body means the default region, us-east-1.
    let created = reqwest::Client::new()
        .put(format!("{endpoint}/{bucket}"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("the S3 server at {endpoint} does not answer: {e}"));
    assert!(created.status().is_success(), "creating bucket {bucket}: {}", created.status());
    let s3 = S3Config {
        endpoint: Some(endpoint),
        region: Some("us-east-1".into()),
        anonymous: false,
        access_key_id: Some("falcon-test".into()),
        secret_access_key: Some("falcon-test-secret".into()),
    };
    ArtifactStore::open(&format!("s3://{bucket}/runs/prod"), &GcsConfig::default(), &s3).expect("open S3 store")
}

/// Generates one `#[tokio::test]` per artifact backend (local dir, GCS emulator, S3 server) for each listed
/// `async fn(ArtifactStore)`.
#[macro_export]
macro_rules! on_every_object_store {
    ($($name:ident),* $(,)?) => {
        mod local {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() { let (store, _dir) = $crate::common::local_store(); super::$name(store).await })*
        }
        mod gcs_emulator {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() { let store = $crate::common::gcs_store().await; super::$name(store).await })*
        }
        mod s3_moto {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() { let store = $crate::common::s3_store().await; super::$name(store).await })*
        }
    };
}
