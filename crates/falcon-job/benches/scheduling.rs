//! Benchmarks of the Job module (not tests):
//! 1. one in-memory scheduling pass over 10,000 queued jobs and 50 pools (target < 10 ms);
//! 2. the same pass with its reads and lease writes on SQLite and MariaDB (list active jobs, batch-claim them,
//!    parse their specs, schedule);
//! 3. local backend submit → running latency (target < 100 ms).
//!
//! Run: `cargo bench -p falcon-job --bench scheduling -- [--mysql mysql://root@127.0.0.1:3306] [--pure-only]`
//! (FALCON_TEST_MYSQL_URL is used when set).

use falcon_core::config::{Platform, PoolBackend, PoolConfig};
use falcon_core::ids::JobId;
use falcon_infra::meta::NewJob;
use falcon_infra::MetaStore;
use falcon_job::backend::local::LocalBackend;
use falcon_job::backend::{Backend, BackendState, Submission};
use falcon_job::scheduler::{schedule, PoolLoad, QueuedJob};
use falcon_job::{JobSpec, Pool, Resources, RetryPolicy};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

const JOBS: usize = 10_000;
const POOLS: usize = 50;
const ACCELS: [&str; 6] = ["v6e-8", "v5litepod-16", "v4-8", "h100-80gb-8", "a100-40gb-8", "v5p-8"];
const ZONES: [&str; 5] = ["us-east5-b", "us-west4-a", "us-central2-b", "europe-west4-a", "asia-northeast1-b"];

struct Rng(u64);
impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

fn pools() -> Vec<Pool> {
    (0..POOLS)
        .map(|i| {
            let accel = ACCELS[i % ACCELS.len()];
            let gpu = accel.starts_with('h') || accel.starts_with('a');
            Pool::from_config(&PoolConfig {
                name: format!("pool-{i}"),
                backend: PoolBackend::Kubernetes,
                zone: ZONES[i % ZONES.len()].into(),
                platform: if gpu { Platform::Gpu } else { Platform::Tpu },
                accelerators: vec![accel.into()],
                capacity: 64 * (1 + (i % 4) as u32),
                settings: BTreeMap::new(),
            })
            .unwrap()
        })
        .collect()
}

fn spec(i: usize, rng: &mut Rng) -> JobSpec {
    let accel = ACCELS[rng.below(ACCELS.len())];
    let zones = if i.is_multiple_of(3) {
        vec![]
    } else {
        vec![ZONES[rng.below(5)].to_string(), ZONES[rng.below(5)].to_string()]
    };
    JobSpec {
        name: format!("job-{i}"),
        image: Some("img".into()),
        command: vec!["python3".into(), "train.py".into()],
        env: BTreeMap::new(),
        resources: Resources { zones, ..Resources::of(accel, 1 + (i % 2) as u32) },
        artifact_uri: None,
        timeout_s: None,
        priority: (i % 5) as i64,
        retry: RetryPolicy::default(),
        labels: BTreeMap::new(),
    }
}

fn pure_pass(specs: &[JobSpec], pools: &[Pool]) -> (Duration, usize) {
    let resolved: Vec<_> = specs.iter().map(|s| s.resolve().unwrap()).collect();
    let jobs: Vec<QueuedJob<'_>> = specs
        .iter()
        .zip(&resolved)
        .enumerate()
        .map(|(i, (s, r))| QueuedJob {
            id: JobId(i as i64),
            priority: s.priority,
            accelerator: &r.accelerator.name,
            chips: r.chips,
            zones: &s.resources.zones,
            excluded: &[],
            has_image: true,
        })
        .collect();
    let mut load = vec![PoolLoad::default(); pools.len()];
    let t = Instant::now();
    let decisions = schedule(&jobs, pools, &mut load);
    let elapsed = t.elapsed();
    let placed = decisions.iter().filter(|d| matches!(d, falcon_job::scheduler::Decision::Place { .. })).count();
    (elapsed, placed)
}

async fn store_pass(url: &str, specs: &[JobSpec], pools: &[Pool]) -> (Duration, Vec<Duration>) {
    let meta = MetaStore::create(url).await.unwrap();
    let t = Instant::now();
    for s in specs {
        let new = NewJob {
            name: s.name.clone(),
            spec: serde_json::to_value(s).unwrap(),
            priority: s.priority,
            labels: BTreeMap::new(),
        };
        meta.insert_job(&new).await.unwrap();
    }
    let insert = t.elapsed();
    let mut passes = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let active = meta.list_jobs(&[falcon_core::status::JobStatus::Queued]).await.unwrap();
        let ids: Vec<JobId> = active.iter().map(|j| j.id).collect();
        let held = meta.claim_jobs(&ids, "bench-worker", Duration::from_secs(60)).await.unwrap();
        assert_eq!(held.len(), JOBS);
        let parsed: Vec<JobSpec> = active.iter().map(|j| JobSpec::from_stored(&j.spec).unwrap()).collect();
        let (_, placed) = pure_pass(&parsed, pools);
        assert!(placed > 0);
        passes.push(t.elapsed());
    }
    meta.close().await;
    (insert, passes)
}

async fn local_latency(samples: usize) -> Vec<Duration> {
    let dir = tempfile::tempdir().unwrap();
    let pool = Pool::from_config(&falcon_core::config::PoolConfig::local_cpu(2)).unwrap();
    let backend = LocalBackend::new(dir.path(), "local").with_grace(Duration::from_millis(100));
    let mut rng = Rng(7);
    let mut out = Vec::new();
    for i in 0..samples {
        let mut s = spec(i, &mut rng);
        s.resources = Resources { devices: Some(1), ..Resources::of("cpu", 1) };
        s.command = vec!["sleep".into(), "5".into()];
        let resolved = s.resolve().unwrap();
        let sub = Submission {
            job: JobId(i as i64),
            name: format!("lat-{i}"),
            spec: &s,
            resolved: &resolved,
            attempt: 1,
            pool: &pool,
        };
        let t = Instant::now();
        let handle = backend.submit(&sub).await.unwrap();
        while !matches!(backend.status(&handle).await.unwrap(), BackendState::Running { .. }) {
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
        out.push(t.elapsed());
        backend.cancel(&handle).await.unwrap();
    }
    out
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e3)
}

fn stats(mut v: Vec<Duration>) -> (Duration, Duration, Duration) {
    v.sort();
    let pct = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    (pct(0.5), pct(0.99), *v.last().unwrap())
}

#[tokio::main]
async fn main() {
    let argv: Vec<String> = std::env::args().collect();
    let smoke = !argv.iter().any(|a| a == "--bench");
    let mysql = argv
        .iter()
        .position(|a| a == "--mysql")
        .and_then(|i| argv.get(i + 1).cloned())
        .or_else(|| std::env::var("FALCON_TEST_MYSQL_URL").ok());
    let n = if smoke { 500 } else { JOBS };
    let mut rng = Rng(42);
    let specs: Vec<JobSpec> = (0..n).map(|i| spec(i, &mut rng)).collect();
    let pools = pools();

    let mut pure: Vec<Duration> = Vec::new();
    let mut placed = 0;
    for _ in 0..20 {
        let (d, p) = pure_pass(&specs, &pools);
        pure.push(d);
        placed = p;
    }
    let (p50, p99, max) = stats(pure);
    println!(
        "| in-memory scheduling pass | {n} jobs × {POOLS} pools | {} | {} | {} | {placed} placed |",
        ms(p50),
        ms(p99),
        ms(max)
    );

    if smoke || argv.iter().any(|a| a == "--pure-only") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut stores = vec![("SQLite".to_string(), format!("sqlite://{}", dir.path().join("b.db").display()))];
    if let Some(server) = &mysql {
        stores.push((
            "MariaDB".into(),
            format!("{}/falcon_bench_jobs_{}", server.trim_end_matches('/'), std::process::id()),
        ));
    }
    for (name, url) in &stores {
        let (insert, passes) = store_pass(url, &specs, &pools).await;
        let (p50, p99, max) = stats(passes);
        println!(
            "| pass incl. list + batch lease claim + spec parse, {name} | {n} jobs × {POOLS} pools | {} | {} | {} | insert {:.1} s |",
            ms(p50),
            ms(p99),
            ms(max),
            insert.as_secs_f64()
        );
        if name == "MariaDB" {
            use sqlx::migrate::MigrateDatabase;
            sqlx::MySql::drop_database(url).await.unwrap();
        }
    }
    let (p50, p99, max) = stats(local_latency(50).await);
    println!("| local backend submit → running | 50 jobs | {} | {} | {} | |", ms(p50), ms(p99), ms(max));
}
