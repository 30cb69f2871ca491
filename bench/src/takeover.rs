//! `tollgate bench takeover`: how long clients wait after the coordinator is SIGKILLed,
//! and whether the window bound holds across the takeover.
//!
//! Each repetition spawns P real `tollgate-bench worker` processes sharing a fresh
//! admission directory and one key, each logging its grant instants. Once the window is
//! saturated, the parent SIGKILLs whichever worker holds the coordinator lock, then
//! measures the gap from just before the kill to the first grant any survivor logged
//! after the dead process was reaped (so no grant of the dead coordinator can count).
//! When the survivors finish, every logged grant of the repetition is checked against the
//! window limit. The gap includes noticing the loss, electing, opening sled, restoring
//! (the write-ahead lease's charge: see `tollgate_quota::lease`) and the policy's own
//! pacing; with a saturated key the last of these is most of it.
//!
//! Beside the gaps it measures what a lease renewal costs on the hot path: one save plus
//! flush of a quota record in a real sled store (a grant waits for at most one of them,
//! and only when its key's lease is used up).

#![allow(clippy::disallowed_methods)] // benchmarks measure wall-clock time

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use serde::Serialize;
use tollgate_actors::clock::unix_now;
use tollgate_quota::window::WindowShape;
use tollgate_storage::{AdmissionDir, CoordinatorLock, QuotaStore, SledStore};

use crate::harness::stats::{print_table, Row};
use crate::harness::window::max_in_window;
use crate::harness::worker::{bench_policy, GrantLine};

/// Time given to the workers to start and connect before they all begin.
const START_DELAY: Duration = Duration::from_millis(600);
/// How long the key runs saturated before the kill (a full window and then some).
const RUN_BEFORE_KILL: Duration = Duration::from_millis(1_300);
/// How long the survivors keep going after the kill.
const RUN_AFTER_KILL: Duration = Duration::from_millis(1_500);
/// A repetition that has not finished by then failed.
const REPETITION_LIMIT: Duration = Duration::from_secs(60);
/// Records saved and flushed for the renewal-cost row.
const FLUSH_SAMPLES: usize = 300;

/// Arguments of `tollgate bench takeover`.
#[derive(Debug, Args)]
pub struct TakeoverArgs {
    /// Worker processes sharing the directory (one is the coordinator that gets killed).
    #[arg(long, default_value_t = 4)]
    pub processes: usize,
    /// The shared key's rate per second.
    #[arg(long, default_value_t = 20.0)]
    pub rate: f64,
    /// The shared key's burst.
    #[arg(long, default_value_t = 5.0)]
    pub burst: f64,
    /// Kills to measure (each in a fresh directory).
    #[arg(long, default_value_t = 5)]
    pub repetitions: usize,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Serialize)]
struct Repetition {
    killed_pid: u32,
    gap_ms: f64,
    grants: usize,
    max_starts_in_any_window: u64,
}

#[derive(Debug, Serialize)]
struct Report {
    processes: usize,
    rate_per_second: f64,
    burst: f64,
    window_limit: u64,
    window_s: f64,
    repetitions: Vec<Repetition>,
    gap_ms_p50: f64,
    gap_ms_max: f64,
    bound_held: bool,
    renewal: Row,
    load_average: Option<String>,
}

pub fn run(args: &TakeoverArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(args.processes >= 2, "--processes must be at least 2");
    anyhow::ensure!(args.rate > 0.0, "--rate must be a positive rate");
    let policy = bench_policy(args.rate, args.burst)?;
    let shape = WindowShape::for_rate(policy.rate_per_second());
    let exe = crate::harness::exe::bench()?;
    let mut repetitions = Vec::new();
    for i in 0..args.repetitions.max(1) {
        let rep = repetition(&exe, args, shape, i)?;
        if !args.json {
            eprintln!(
                "repetition {}: killed {}, first survivor grant {:.1} ms later, {} grants, max {} in a window (limit {})",
                i + 1,
                rep.killed_pid,
                rep.gap_ms,
                rep.grants,
                rep.max_starts_in_any_window,
                shape.limit
            );
        }
        repetitions.push(rep);
    }
    let mut gaps: Vec<f64> = repetitions.iter().map(|r| r.gap_ms).collect();
    gaps.sort_by(f64::total_cmp);
    let report = Report {
        processes: args.processes,
        rate_per_second: args.rate,
        burst: args.burst,
        window_limit: shape.limit,
        window_s: shape.length.as_secs_f64(),
        gap_ms_p50: gaps[(gaps.len() - 1) / 2],
        gap_ms_max: gaps[gaps.len() - 1],
        bound_held: repetitions
            .iter()
            .all(|r| r.max_starts_in_any_window <= shape.limit),
        repetitions,
        renewal: renewal_cost()?,
        load_average: std::fs::read_to_string("/proc/loadavg")
            .ok()
            .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" ")),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_table(std::slice::from_ref(&report.renewal));
        println!();
        println!(
            "takeover after SIGKILL ({} processes, rate {}/s, burst {}): first survivor grant p50 {:.1} ms, max {:.1} ms over {} kills",
            report.processes,
            report.rate_per_second,
            report.burst,
            report.gap_ms_p50,
            report.gap_ms_max,
            report.repetitions.len()
        );
        println!(
            "window bound across the takeovers: {} (max {} starts in any {:.0} s window, limit {})",
            if report.bound_held {
                "held"
            } else {
                "EXCEEDED"
            },
            report
                .repetitions
                .iter()
                .map(|r| r.max_starts_in_any_window)
                .max()
                .unwrap_or(0),
            report.window_s,
            report.window_limit
        );
        if let Some(load) = &report.load_average {
            println!("load average: {load}");
        }
    }
    Ok(if report.bound_held {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Children killed (and reaped) if a repetition fails early.
struct Workers(Vec<Child>);

impl Drop for Workers {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn repetition(
    exe: &Path,
    args: &TakeoverArgs,
    shape: WindowShape,
    index: usize,
) -> anyhow::Result<Repetition> {
    let tmp = tempfile::tempdir().context("creating a temporary directory")?;
    let dir = tmp.path().join("admission");
    let logs = tmp.path().join("logs");
    std::fs::create_dir(&logs)?;
    // Enough work for everyone to stay busy until well after the kill.
    let total_s = (START_DELAY + RUN_BEFORE_KILL + RUN_AFTER_KILL).as_secs_f64();
    let per_process = ((args.rate * total_s + args.burst) / args.processes as f64).ceil() as usize;
    let start_at = unix_now().as_micros() + START_DELAY.as_micros() as u64;
    let mut workers = Workers(Vec::new());
    for i in 0..args.processes {
        let child = Command::new(exe)
            .arg(crate::harness::exe::WORKER)
            .arg("--dir")
            .arg(&dir)
            .args(["--requests", &per_process.to_string()])
            .args(["--rate", &args.rate.to_string()])
            .args(["--burst", &args.burst.to_string()])
            .args(["--start-at-us", &start_at.to_string()])
            .arg("--log")
            .arg(logs.join(format!("w{i}.jsonl")))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .context("spawning a bench worker")?;
        workers.0.push(child);
    }
    // Vary the kill instant between repetitions (by up to half a window's worth of
    // grants), so it falls at different points of the lease cycle.
    let jitter = Duration::from_millis((index as u64 * 37) % 100);
    let kill_at = start_at + (RUN_BEFORE_KILL + jitter).as_micros() as u64;
    let now = unix_now().as_micros();
    if kill_at > now {
        std::thread::sleep(Duration::from_micros(kill_at - now));
    }
    let admission = AdmissionDir::at(&dir)?;
    let victim = tollgate_storage::read_holder(&admission)?
        .context("no coordinator holds the lock at the kill instant")?
        .pid;
    let index = workers
        .0
        .iter()
        .position(|c| c.id() == victim)
        .context("the coordinator is not one of the workers")?;
    let before_kill = unix_now().as_micros();
    let killed = &mut workers.0[index];
    killed.kill().context("sending SIGKILL")?;
    killed.wait()?;
    drop(workers.0.remove(index)); // reaped
    let reaped = unix_now().as_micros();
    let started = Instant::now();
    for mut child in std::mem::take(&mut workers.0) {
        loop {
            if let Some(status) = child.try_wait()? {
                let mut err = String::new();
                if let Some(mut e) = child.stderr.take() {
                    use std::io::Read;
                    let _ = e.read_to_string(&mut err);
                }
                anyhow::ensure!(status.success(), "a surviving worker failed: {err}");
                break;
            }
            if started.elapsed() > REPETITION_LIMIT {
                let _ = child.kill();
                let _ = child.wait();
                anyhow::bail!("a surviving worker did not finish within {REPETITION_LIMIT:?}");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let grants = read_grants(&logs)?;
    let first_after = grants
        .iter()
        .find(|g| g.granted_at_us > reaped)
        .context("no survivor was granted after the kill")?;
    anyhow::ensure!(
        first_after.pid != victim,
        "a grant logged for the killed process after it was reaped"
    );
    let mut instants: Vec<u64> = grants.iter().map(|g| g.granted_at_us).collect();
    instants.sort_unstable();
    Ok(Repetition {
        killed_pid: victim,
        gap_ms: (first_after.granted_at_us - before_kill) as f64 / 1e3,
        grants: instants.len(),
        max_starts_in_any_window: max_in_window(&instants, shape.length),
    })
}

/// Every logged grant, by instant.
fn read_grants(logs: &Path) -> anyhow::Result<Vec<GrantLine>> {
    let mut out: Vec<GrantLine> = Vec::new();
    for entry in std::fs::read_dir(logs)? {
        let path: PathBuf = entry?.path();
        let text = std::fs::read_to_string(&path)?;
        for line in text.lines() {
            // A line cut short by the kill is not a grant anyone saw.
            if let Ok(g) = serde_json::from_str::<GrantLine>(line) {
                out.push(g);
            }
        }
    }
    out.sort_by_key(|g| g.granted_at_us);
    Ok(out)
}

/// Save and flush a quota-record-sized value in a real sled store, `FLUSH_SAMPLES` times.
fn renewal_cost() -> anyhow::Result<Row> {
    let tmp = tempfile::tempdir()?;
    let dir = AdmissionDir::at(tmp.path().join("admission"))?;
    let lock = CoordinatorLock::try_acquire(&dir)?.context("a fresh directory is unlocked")?;
    let store = SledStore::open(&dir, &lock)?.store;
    let mut record = vec![b'x'; 600];
    let mut latencies = Vec::with_capacity(FLUSH_SAMPLES);
    for i in 0..FLUSH_SAMPLES {
        // A different record each time, as every renewal's snapshot is.
        record[..8].copy_from_slice(&(i as u64).to_le_bytes());
        let t = Instant::now();
        store.save("aws/123456789012/us-east-1/bench:Shared", &record)?;
        store.flush()?;
        latencies.push(t.elapsed());
    }
    store.mark_clean_shutdown()?;
    Ok(Row::new(
        "lease renewal: sled save + flush (600 B)",
        latencies,
        None,
    ))
}
