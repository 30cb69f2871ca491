//! `tollgate bench admission --in-process`: single-process admission latency and
//! throughput through the real actors and a real sled store, on an unlimited policy, with
//! the `governor` crate's in-memory `check()` measured in the same run as the floor.
//!
//! tollgate's admission is a message to an actor on another thread and back, so it cannot
//! approach a lock-free atomic check; the ratio shows what the actor hop costs.

#![allow(clippy::disallowed_methods)] // benchmarks measure wall-clock time

use std::num::NonZeroU32;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use governor::{Quota, RateLimiter};
use serde::Serialize;
use tollgate_actors::{AdmissionRuntime, RuntimeConfig, WaitOptions};
use tollgate_quota::{Policy, QuotaKey};
use tollgate_storage::{AdmissionDir, CoordinatorLock, SledStore};

use crate::admission::InProcess;
use crate::harness::stats::{print_table, Row};

#[derive(Debug, Serialize)]
struct Report {
    rows: Vec<Row>,
    p50_ratio_to_governor: f64,
    p99_ratio_to_governor: f64,
    throughput_ratio_to_governor: f64,
}

pub fn run(args: &InProcess) -> anyhow::Result<ExitCode> {
    let n = args.requests.max(100);
    let callers = args.callers.max(1);
    let tmp = tempfile::tempdir().context("creating a temporary admission directory")?;
    let dir = AdmissionDir::at(tmp.path().join("admission"))?;
    let lock =
        CoordinatorLock::try_acquire(&dir)?.context("locking the fresh benchmark directory")?;
    let opened = SledStore::open(&dir, &lock)?;
    let store = Arc::new(opened.store);
    let runtime = AdmissionRuntime::start(RuntimeConfig::for_this_process(store.clone()))?;
    let handle = runtime.handle();
    let key: QuotaKey = "aws/123456789012/us-east-1/bench:unlimited".parse()?;
    let unlimited = Policy::new(1e9, 1e9, 1_000_000, 0)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;

    let (admit_latency, cycle_latency, throughput) = rt.block_on(async {
        let wait = WaitOptions::default();
        let slot = handle.reserve(&key, unlimited, wait).await?;
        for _ in 0..1_000 {
            slot.admit(1, false, wait).await?; // warm-up
        }
        let mut admit_latency = Vec::with_capacity(n);
        for _ in 0..n {
            let t = Instant::now();
            slot.admit(1, false, wait).await?;
            admit_latency.push(t.elapsed());
        }
        drop(slot);
        let mut cycle_latency = Vec::with_capacity(n / 4);
        for _ in 0..n / 4 {
            let t = Instant::now();
            let slot = handle.reserve(&key, unlimited, wait).await?;
            slot.admit(1, false, wait).await?;
            slot.release();
            cycle_latency.push(t.elapsed());
        }
        let started = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..callers {
            let handle = handle.clone();
            let key = key.clone();
            tasks.push(tokio::spawn(async move {
                let slot = handle.reserve(&key, unlimited, wait).await?;
                for _ in 0..n / callers {
                    slot.admit(1, false, wait).await?;
                }
                Ok::<_, tollgate_actors::AdmissionError>(())
            }));
        }
        for t in tasks {
            t.await??;
        }
        let throughput = (n / callers * callers) as f64 / started.elapsed().as_secs_f64();
        anyhow::Ok((admit_latency, cycle_latency, throughput))
    })?;
    rt.block_on(runtime.shutdown())?;
    store.mark_clean_shutdown()?;

    let (governor_latency, governor_throughput) = measure_governor(n, callers);
    let admit = Row::new(
        "tollgate admit (held reservation)",
        admit_latency,
        Some(throughput),
    );
    let cycle = Row::new("tollgate reserve+admit+release", cycle_latency, None);
    let floor = Row::new(
        "governor check (floor)",
        governor_latency,
        Some(governor_throughput),
    );
    let report = Report {
        p50_ratio_to_governor: admit.p50_us / floor.p50_us.max(1e-3),
        p99_ratio_to_governor: admit.p99_us / floor.p99_us.max(1e-3),
        throughput_ratio_to_governor: throughput / governor_throughput.max(1.0),
        rows: vec![admit, cycle, floor],
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!("in-process admission, unlimited policy, {n} admissions, {callers} callers for throughput");
        print_table(&report.rows);
        println!(
            "ratio tollgate/governor: p50 {:.1}x, p99 {:.1}x, throughput {:.4}x",
            report.p50_ratio_to_governor,
            report.p99_ratio_to_governor,
            report.throughput_ratio_to_governor
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Individual `check()` latencies, and throughput with `callers` threads sharing one
/// limiter.
fn measure_governor(n: usize, callers: usize) -> (Vec<Duration>, f64) {
    let limiter = Arc::new(RateLimiter::direct(Quota::per_second(NonZeroU32::MAX)));
    let mut latency = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let _ = std::hint::black_box(limiter.check());
        latency.push(t.elapsed());
    }
    let per_thread = n * 10 / callers;
    let started = Instant::now();
    let threads: Vec<_> = (0..callers)
        .map(|_| {
            let limiter = limiter.clone();
            std::thread::spawn(move || {
                for _ in 0..per_thread {
                    let _ = std::hint::black_box(limiter.check());
                }
            })
        })
        .collect();
    for t in threads {
        let _ = t.join();
    }
    let throughput = (per_thread * callers) as f64 / started.elapsed().as_secs_f64();
    (latency, throughput)
}
