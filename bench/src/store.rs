//! `tollgate bench store`: the inventory store's write throughput and query latency
//! (issue 34's targets: a scan of 100,000 resources written at ≥ 50,000 resources/s on
//! SQLite and ≥ 20,000/s on PostgreSQL, in the scan's own transactions; with 1,000,000
//! stored, ten such scans of different accounts, the query behind `tollgate resources
//! --types T --accounts A` answering its ≤ 10,000 rows in ≤ 50 ms).
//!
//! Each run starts from an empty store: a fresh SQLite file, or a fresh schema on the
//! PostgreSQL server `--postgres-url` (else TOLLGATE_TEST_POSTGRES_URL) names. It writes
//! `--accounts` synthetic scans (`tollgate_inventory::bench::synthetic_report`: ten
//! resource types, tags and properties of the sizes a real scan has) through
//! `Store::write_report`, exactly as `discover --store` does, timing each write; then an
//! unchanged rescan of one account (read, compare, touch every row); then the query,
//! timed inside the process (`Store::resources`, every page). The figures are pooled
//! over `--runs` runs: min, median and max of each. The targets are printed beside them
//! and, like every bench here, a miss exits 1.

#![allow(clippy::disallowed_methods)] // benchmarks measure wall-clock time

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use serde::Serialize;
use tollgate_inventory::bench::{synthetic_count, synthetic_report};
use tollgate_inventory::{PageSize, ResourceFilter, Store, TypePattern};

/// The queried type (one tenth of every synthetic scan).
const QUERY_TYPE: &str = "AWS::S3::Bucket";
/// Queries per run; the median is the run's figure.
const QUERIES: usize = 5;

/// Which engines run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Engines {
    Sqlite,
    Postgres,
    Both,
}

/// `bench store` flags.
#[derive(Debug, Args)]
pub struct StoreArgs {
    #[arg(long, value_enum, default_value_t = Engines::Both)]
    pub engine: Engines,
    /// Runs per engine (each from an empty store).
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Resources per scan.
    #[arg(long, default_value_t = 100_000)]
    pub resources: usize,
    /// Scans of different accounts per run (the query runs over all of them).
    #[arg(long, default_value_t = 10)]
    pub accounts: usize,
    /// The PostgreSQL server (default: TOLLGATE_TEST_POSTGRES_URL; scripts/postgres.sh
    /// starts a throwaway one). Each run makes, and drops, a schema of its own.
    #[arg(long, value_name = "URL")]
    pub postgres_url: Option<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// One engine's figures over its runs.
#[derive(Debug, Serialize)]
struct EngineRow {
    engine: &'static str,
    runs: usize,
    resources_per_scan: usize,
    stored: usize,
    /// The first scan's write (an empty store), resources/s: [min, median, max].
    first_scan_per_s: [f64; 3],
    /// Every scan's write (the store filling up to `stored`), resources/s.
    every_scan_per_s: [f64; 3],
    /// The unchanged rescan of one account, resources/s.
    rescan_per_s: [f64; 3],
    /// The query's rows and its time, ms: [min, median, max] of the runs' medians.
    query_rows: usize,
    query_ms: [f64; 3],
    target_per_s: f64,
    target_query_ms: f64,
    /// Each run's own figures (`--json`, for scripts/bench-table).
    #[serde(skip)]
    per_run: Vec<RunFigures>,
}

/// One run's figures on one engine.
#[derive(Debug, Clone, Serialize)]
struct RunFigures {
    first_scan_per_s: f64,
    /// The median over the run's scans.
    every_scan_per_s: f64,
    rescan_per_s: f64,
    query_ms: f64,
    query_rows: usize,
}

pub fn run(args: &StoreArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(args.runs >= 1, "--runs must be at least 1");
    anyhow::ensure!(
        args.resources >= 10 && args.accounts >= 1,
        "--resources must be at least 10 and --accounts at least 1"
    );
    let mut rows = Vec::new();
    if matches!(args.engine, Engines::Sqlite | Engines::Both) {
        rows.push(measure_engine(args, "sqlite", 50_000.0)?);
    }
    if matches!(args.engine, Engines::Postgres | Engines::Both) {
        let url = args
            .postgres_url
            .clone()
            .or_else(|| std::env::var("TOLLGATE_TEST_POSTGRES_URL").ok())
            .context(
                "--engine postgres needs a server: --postgres-url URL or TOLLGATE_TEST_POSTGRES_URL \
                 (`. scripts/postgres.sh; start_postgres` starts a throwaway one)",
            )?;
        rows.push(measure_engine(args, &url, 20_000.0)?);
    }
    let mut failures = Vec::new();
    for r in &rows {
        if r.every_scan_per_s[1] < r.target_per_s {
            failures.push(format!(
                "{}: {:.0} resources/s (median over every scan) is below the target {:.0}/s",
                r.engine, r.every_scan_per_s[1], r.target_per_s
            ));
        }
        if r.query_ms[1] > r.target_query_ms {
            failures.push(format!(
                "{}: the query took {:.1} ms (median), above the target {:.0} ms",
                r.engine, r.query_ms[1], r.target_query_ms
            ));
        }
    }
    if args.json {
        // One object per run, each engine's figures in it: scripts/bench-table reads
        // a `runs` list as one run each.
        let runs: Vec<serde_json::Value> = (0..args.runs)
            .map(|i| {
                let mut run = serde_json::Map::new();
                for r in &rows {
                    run.insert(r.engine.to_owned(), serde_json::to_value(&r.per_run[i])?);
                }
                Ok(serde_json::Value::Object(run))
            })
            .collect::<Result<_, serde_json::Error>>()?;
        let out = serde_json::json!({"runs": runs, "resources_per_scan": args.resources, "scans": args.accounts});
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print_table(&rows);
    }
    for f in &failures {
        eprintln!("bench store: FAILED: {f}");
    }
    Ok(if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn account(n: usize) -> String {
    format!("{:012}", 100_000_000_000u64 + n as u64)
}

/// `engine` is `sqlite` or a PostgreSQL URL.
fn measure_engine(args: &StoreArgs, engine: &str, target: f64) -> anyhow::Result<EngineRow> {
    let name = if engine == "sqlite" {
        "sqlite"
    } else {
        "postgres"
    };
    let (mut first, mut every, mut rescan, mut query) = (vec![], vec![], vec![], vec![]);
    let mut rows_found = 0;
    let mut per_run = Vec::new();
    for run in 0..args.runs {
        let scans_before = every.len();
        let place = Place::new(engine, run)?;
        let mut store = Store::open(&place.url)?;
        for n in 0..args.accounts {
            let report =
                synthetic_report(&account(n), args.resources, "2026-12-01T00:00:00Z", "prod");
            let started = Instant::now();
            let summary = store.write_report(&report)?;
            let rate = per_s(args.resources, started.elapsed());
            anyhow::ensure!(
                summary.counts.added as usize == args.resources,
                "scan {n}: {summary:?}"
            );
            if n == 0 {
                first.push(rate);
            }
            every.push(rate);
        }
        let again = synthetic_report(&account(0), args.resources, "2026-12-02T00:00:00Z", "prod");
        let started = Instant::now();
        let summary = store.write_report(&again)?;
        rescan.push(per_s(args.resources, started.elapsed()));
        anyhow::ensure!(
            summary.counts.modified == 0,
            "the rescan changed: {summary:?}"
        );
        let (found, median) = time_query(&mut store, &account(args.accounts / 2))?;
        rows_found = found;
        query.push(median);
        per_run.push(RunFigures {
            first_scan_per_s: first[run],
            every_scan_per_s: spread(every[scans_before..].to_vec())[1],
            rescan_per_s: rescan[run],
            query_ms: median,
            query_rows: found,
        });
        eprintln!(
            "bench store: {name} run {}: first scan {:.0}/s, last {:.0}/s, rescan {:.0}/s, query {found} rows {median:.1} ms",
            run + 1,
            first[run],
            every[every.len() - 1],
            rescan[run]
        );
    }
    anyhow::ensure!(
        rows_found == synthetic_count(QUERY_TYPE, args.resources),
        "the query found {rows_found} rows"
    );
    Ok(EngineRow {
        engine: name,
        runs: args.runs,
        resources_per_scan: args.resources,
        stored: args.resources * args.accounts,
        first_scan_per_s: spread(first),
        every_scan_per_s: spread(every),
        rescan_per_s: spread(rescan),
        query_rows: rows_found,
        query_ms: spread(query),
        target_per_s: target,
        target_query_ms: 50.0,
        per_run,
    })
}

/// The query behind `resources --types T --accounts A`, every page: rows and the median
/// of [`QUERIES`] timings, ms.
fn time_query(store: &mut Store, account: &str) -> anyhow::Result<(usize, f64)> {
    let filter = ResourceFilter {
        types: vec![TypePattern::parse(QUERY_TYPE)?],
        accounts: vec![account.to_owned()],
        page_size: PageSize::new(PageSize::MAX)?,
        ..ResourceFilter::default()
    };
    let mut times = Vec::new();
    let mut rows = 0;
    for _ in 0..QUERIES {
        let started = Instant::now();
        let mut cursor = None;
        rows = 0;
        loop {
            let page = store.resources(&ResourceFilter {
                cursor,
                ..filter.clone()
            })?;
            rows += page.rows.len();
            match page.next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        times.push(started.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    Ok((rows, times[QUERIES / 2]))
}

fn per_s(n: usize, d: Duration) -> f64 {
    n as f64 / d.as_secs_f64().max(1e-9)
}

/// [min, median, max].
fn spread(mut v: Vec<f64>) -> [f64; 3] {
    v.sort_by(f64::total_cmp);
    [v[0], v[v.len() / 2], v[v.len() - 1]]
}

/// Where one run's store lives: a fresh SQLite file in a temporary directory, or a fresh
/// PostgreSQL schema (dropped after the run).
struct Place {
    url: String,
    _dir: Option<tempfile::TempDir>,
    postgres: Option<(String, String)>,
}

impl Place {
    fn new(engine: &str, run: usize) -> anyhow::Result<Place> {
        if engine == "sqlite" {
            let dir = tempfile::tempdir()?;
            let url = format!("sqlite:{}", dir.path().join("inventory.sqlite").display());
            return Ok(Place {
                url,
                _dir: Some(dir),
                postgres: None,
            });
        }
        let schema = format!("bench_store_{}_{run}", std::process::id());
        let mut client = postgres::Client::connect(engine, postgres::NoTls)
            .context("connecting to the PostgreSQL server (its URL is not printed)")?;
        client.batch_execute(&format!("CREATE SCHEMA {schema}"))?;
        let separator = if engine.contains('?') { '&' } else { '?' };
        Ok(Place {
            url: format!("{engine}{separator}options=-csearch_path%3D{schema}"),
            _dir: None,
            postgres: Some((engine.to_owned(), schema)),
        })
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        if let Some((base, schema)) = &self.postgres {
            if let Ok(mut c) = postgres::Client::connect(base, postgres::NoTls) {
                let _ = c.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"));
            }
        }
    }
}

fn print_table(rows: &[EngineRow]) {
    println!(
        "{:<9} {:>4} {:>9} {:>9}  {:<26} {:<26} {:<26} {:>6}  {:<22} {:>8}",
        "engine",
        "runs",
        "per scan",
        "stored",
        "first scan /s (min/med/max)",
        "every scan /s",
        "unchanged rescan /s",
        "rows",
        "query ms (min/med/max)",
        "target"
    );
    let fmt = |v: [f64; 3]| format!("{:.0} / {:.0} / {:.0}", v[0], v[1], v[2]);
    for r in rows {
        println!(
            "{:<9} {:>4} {:>9} {:>9}  {:<26} {:<26} {:<26} {:>6}  {:<22} {:>8}",
            r.engine,
            r.runs,
            r.resources_per_scan,
            r.stored,
            fmt(r.first_scan_per_s),
            fmt(r.every_scan_per_s),
            fmt(r.rescan_per_s),
            r.query_rows,
            format!(
                "{:.1} / {:.1} / {:.1}",
                r.query_ms[0], r.query_ms[1], r.query_ms[2]
            ),
            format!("{:.0}/s", r.target_per_s),
        );
    }
}
