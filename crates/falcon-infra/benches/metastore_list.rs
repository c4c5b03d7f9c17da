//! Benchmark: insert N experiments, then list 50 filtered by status + label + goal, newest first.
//!
//! Run: `cargo bench -p falcon-infra --bench metastore_list -- [--n 100000] [--queries 2000] [--mysql URL]`
//! (`--mysql` names a server, e.g. `mysql://root@127.0.0.1:3306`; the benchmark creates and drops its own
//! database; without it, FALCON_TEST_MYSQL_URL is used when set, else only SQLite runs; `--keep-sqlite PATH`
//! keeps the SQLite database there, to time `falcon exp list` against it).
//!
//! Inserts go through `MetaStore::insert_experiments` in batches of 1,000 (one transaction each). Statuses
//! are then spread with one SQL `UPDATE` (setup only, not timed): new experiments all start PENDING, and
//! walking 100,000 of them through the lifecycle one transaction at a time would measure something else.

use falcon_core::status::{Direction, ExperimentStatus, Scenario};
use falcon_infra::meta::{ExperimentFilter, NewExperiment, NewGoal};
use falcon_infra::MetaStore;
use std::time::{Duration, Instant};

const GOALS: usize = 100;
const TEAMS: [&str; 5] = ["perf", "infra", "research", "kernels", "serving"];
const STATUSES: [ExperimentStatus; 6] = [
    ExperimentStatus::Pending,
    ExperimentStatus::Provisioning,
    ExperimentStatus::Running,
    ExperimentStatus::Completed,
    ExperimentStatus::Failed,
    ExperimentStatus::Cancelled,
];

struct Args {
    n: usize,
    queries: usize,
    mysql: Option<String>,
    keep_sqlite: Option<String>,
}

fn parse_args() -> Args {
    let mut args =
        Args { n: 100_000, queries: 2_000, mysql: std::env::var("FALCON_TEST_MYSQL_URL").ok(), keep_sqlite: None };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if !argv.iter().any(|a| a == "--bench") {
        // Built and run by `cargo test --benches`: a small smoke run keeps the benchmark honest and fast.
        args.n = 2_000;
        args.queries = 50;
    }
    let mut it = argv.into_iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--n" => args.n = it.next().and_then(|v| v.parse().ok()).expect("--n NUMBER"),
            "--queries" => args.queries = it.next().and_then(|v| v.parse().ok()).expect("--queries NUMBER"),
            "--mysql" => args.mysql = it.next(),
            "--sqlite-only" => args.mysql = None,
            // Keep the SQLite database at this path (for timing `falcon exp list` against it afterwards).
            "--keep-sqlite" => args.keep_sqlite = it.next(),
            _ => {}
        }
    }
    args
}

/// A small deterministic generator (SplitMix64), so every run lists the same data.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

struct Result {
    backend: &'static str,
    n: usize,
    insert: Duration,
    p50: Duration,
    p99: Duration,
    max: Duration,
    mean_rows: f64,
    newest_p99: Duration,
}

async fn run(backend: &'static str, url: &str, args: &Args) -> Result {
    let store = MetaStore::create(url).await.expect("connect");
    let mut goals = Vec::new();
    for g in 0..GOALS {
        let goal = NewGoal {
            title: format!("goal {g}"),
            workload: None,
            hardware: None,
            metric: "mfu".into(),
            direction: Direction::Maximize,
            target: None,
            baseline: None,
            priority: 0,
        };
        goals.push(store.insert_goal(&goal).await.expect("insert goal").id);
    }
    let mut rng = Rng(42);
    let started = Instant::now();
    let mut batch = Vec::with_capacity(1000);
    for i in 0..args.n {
        let team = TEAMS[rng.below(TEAMS.len())];
        let model = format!("model-{}", rng.below(10));
        batch.push(NewExperiment {
            name: format!("exp-{i}"),
            scenario: Scenario::Benchmark,
            goal: Some(goals[rng.below(GOALS)]),
            session: None,
            baseline: None,
            spec: serde_json::json!({"name": format!("exp-{i}"), "config": {"batch_size": 128 << rng.below(4), "remat": "full", "parallelism": {"fsdp": 16}}}),
            config_hash: format!("{:016x}", rng.next()),
            labels: [("team".to_string(), team.to_string()), ("model".to_string(), model)].into(),
            code: None,
        });
        if batch.len() == 1000 || i + 1 == args.n {
            store.insert_experiments(&batch).await.expect("insert batch");
            batch.clear();
        }
    }
    let insert = started.elapsed();
    spread_statuses(url).await;

    let mut lat = Vec::with_capacity(args.queries);
    let mut rows = 0usize;
    for _ in 0..args.queries {
        let filter = ExperimentFilter {
            status: Some(STATUSES[rng.below(STATUSES.len())]),
            goal: Some(goals[rng.below(GOALS)]),
            labels: vec![("team".into(), TEAMS[rng.below(TEAMS.len())].into())],
            limit: 50,
            ..Default::default()
        };
        let t = Instant::now();
        let found = store.list_experiments(&filter).await.expect("list");
        lat.push(t.elapsed());
        rows += found.len();
    }
    let mut newest = Vec::with_capacity(args.queries);
    for _ in 0..args.queries.min(500) {
        let t = Instant::now();
        let found = store.list_experiments(&ExperimentFilter { limit: 50, ..Default::default() }).await.expect("list");
        newest.push(t.elapsed());
        assert_eq!(found.len(), 50.min(args.n));
    }
    store.close().await;
    lat.sort();
    newest.sort();
    Result {
        backend,
        n: args.n,
        insert,
        p50: pct(&lat, 0.50),
        p99: pct(&lat, 0.99),
        max: *lat.last().unwrap(),
        mean_rows: rows as f64 / args.queries as f64,
        newest_p99: pct(&newest, 0.99),
    }
}

/// Setup only: gives experiments a spread of statuses (all start PENDING).
async fn spread_statuses(url: &str) {
    let sql = "UPDATE experiments SET status = CASE id % 6 WHEN 0 THEN 'PENDING' WHEN 1 THEN 'PROVISIONING' \
               WHEN 2 THEN 'RUNNING' WHEN 3 THEN 'COMPLETED' WHEN 4 THEN 'FAILED' ELSE 'CANCELLED' END";
    if url.starts_with("sqlite") {
        let pool = sqlx::SqlitePool::connect(url).await.unwrap();
        sqlx::query(sql).execute(&pool).await.unwrap();
        sqlx::query("ANALYZE").execute(&pool).await.unwrap();
        pool.close().await;
    } else {
        let pool = sqlx::MySqlPool::connect(url).await.unwrap();
        sqlx::query(sql).execute(&pool).await.unwrap();
        sqlx::query("ANALYZE TABLE experiments, experiment_labels").execute(&pool).await.unwrap();
        pool.close().await;
    }
}

fn pct(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * q).round() as usize]
}

fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1000.0)
}

#[tokio::main]
async fn main() {
    let args = parse_args();
    let mut results = Vec::new();
    let dir = tempfile::tempdir().unwrap();
    let sqlite = match &args.keep_sqlite {
        Some(path) => format!("sqlite://{path}"),
        None => format!("sqlite://{}", dir.path().join("bench.db").display()),
    };
    results.push(run("SQLite (file, WAL)", &sqlite, &args).await);
    if let Some(server) = &args.mysql {
        let url = format!("{}/falcon_bench_{}", server.trim_end_matches('/'), std::process::id());
        results.push(run("MariaDB", &url, &args).await);
        use sqlx::migrate::MigrateDatabase;
        sqlx::MySql::drop_database(&url).await.expect("drop bench database");
    }
    println!("| backend | experiments | insert (s) | insert rate (/s) | filtered list p50 (ms) | p99 (ms) | max (ms) | rows/query | newest-50 p99 (ms) |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for r in &results {
        println!(
            "| {} | {} | {:.1} | {:.0} | {} | {} | {} | {:.1} | {} |",
            r.backend,
            r.n,
            r.insert.as_secs_f64(),
            r.n as f64 / r.insert.as_secs_f64(),
            ms(r.p50),
            ms(r.p99),
            ms(r.max),
            r.mean_rows,
            ms(r.newest_p99)
        );
    }
}
