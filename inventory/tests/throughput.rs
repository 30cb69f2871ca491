//! The store's throughput and query latency (issue 34's targets: ≥ 50,000 resources/s on
//! SQLite, ≥ 20,000/s on PostgreSQL, the `--types T --accounts A` query over 1,000,000
//! stored resources in ≤ 50 ms). Ignored: run in release, on purpose:
//!
//! ```sh
//! cargo test --release -p tollgate-inventory --test throughput -- --ignored --nocapture
//! ```
//!
//! It prints its figures and asserts nothing about them (benchmarks never fail the
//! suite); PostgreSQL is measured when `TOLLGATE_TEST_POSTGRES_URL` is set.

#![allow(clippy::disallowed_methods)] // a benchmark measures wall-clock time

use std::time::{Duration, Instant};

use tollgate_inventory::bench::{synthetic_count, synthetic_report};
use tollgate_inventory::{PageSize, ResourceFilter, Store, TypePattern};

const ITEMS: usize = 100_000;
const ACCOUNTS: usize = 10;
const QUERIES: usize = 5;

fn account(n: usize) -> String {
    format!("{:012}", 100_000_000_000u64 + n as u64)
}

fn measure(engine: &str, url: &str) {
    let mut store = Store::open(url).unwrap();
    let mut write_times = Vec::new();
    for n in 0..ACCOUNTS {
        let report = synthetic_report(&account(n), ITEMS, "2026-12-01T00:00:00Z", "prod");
        let started = Instant::now();
        let summary = store.write_report(&report).unwrap();
        write_times.push(started.elapsed());
        assert_eq!(summary.counts.added as usize, ITEMS);
    }
    // A second scan of one account, nothing changed: read, compare, touch every row.
    let again = synthetic_report(&account(0), ITEMS, "2026-12-02T00:00:00Z", "prod");
    let started = Instant::now();
    let summary = store.write_report(&again).unwrap();
    let rescan = started.elapsed();
    assert_eq!(summary.counts.modified, 0);

    let filter = ResourceFilter {
        types: vec![TypePattern::parse("AWS::S3::Bucket").unwrap()],
        accounts: vec![account(ACCOUNTS / 2)],
        page_size: PageSize::new(PageSize::MAX).unwrap(),
        ..ResourceFilter::default()
    };
    let mut query_times = Vec::new();
    for _ in 0..QUERIES {
        let started = Instant::now();
        let page = store.resources(&filter).unwrap();
        query_times.push(started.elapsed());
        assert_eq!(page.rows.len(), synthetic_count("AWS::S3::Bucket", ITEMS));
        assert!(page.next.is_none());
    }
    let rate = |time: Duration| ITEMS as f64 / time.as_secs_f64();
    let first = write_times[0];
    let last = *write_times.last().unwrap();
    query_times.sort();
    println!(
        "{engine}: first scan of {ITEMS} resources {:.2} s = {:.0} resources/s; tenth (900,000 stored) {:.2} s = {:.0}/s; \
         unchanged rescan {:.2} s = {:.0}/s; query --types AWS::S3::Bucket --accounts A over {} stored, {} rows: \
         median {:.1} ms, max {:.1} ms",
        first.as_secs_f64(),
        rate(first),
        last.as_secs_f64(),
        rate(last),
        rescan.as_secs_f64(),
        rate(rescan),
        ITEMS * ACCOUNTS,
        synthetic_count("AWS::S3::Bucket", ITEMS),
        query_times[QUERIES / 2].as_secs_f64() * 1000.0,
        query_times[QUERIES - 1].as_secs_f64() * 1000.0,
    );
}

#[test]
#[ignore = "a benchmark: run with --release -- --ignored --nocapture"]
fn sqlite_throughput_and_query_latency() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("inventory.sqlite");
    measure("sqlite", &format!("sqlite:{}", path.display()));
}

#[test]
#[ignore = "a benchmark: run with --release -- --ignored --nocapture"]
fn postgres_throughput_and_query_latency() {
    let Ok(base) = std::env::var("TOLLGATE_TEST_POSTGRES_URL") else {
        println!("SKIPPED: TOLLGATE_TEST_POSTGRES_URL unset");
        return;
    };
    let schema = format!("bench_{}", std::process::id());
    let mut client = postgres::Client::connect(&base, postgres::NoTls).unwrap();
    client
        .batch_execute(&format!("CREATE SCHEMA {schema}"))
        .unwrap();
    let separator = if base.contains('?') { '&' } else { '?' };
    measure(
        "postgres",
        &format!("{base}{separator}options=-csearch_path%3D{schema}"),
    );
    client
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .unwrap();
}
