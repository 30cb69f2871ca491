//! One run of `bench outage`: a fresh fault proxy and admission directory, the
//! processes spawned, the window armed at the first DescribeTable, every process waited
//! for, and the figures read from the proxy (server-side) and the reports.

#![allow(clippy::disallowed_methods)] // a benchmark measures real time

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::Serialize;

use super::fault_proxy::{FaultProxy, Window};
use super::moto::{ACCESS_KEY, SECRET_KEY};
use super::Breakers;
use crate::harness::exits;

/// The scan deadline of each process: far beyond any outage the bench runs.
const SCAN_TIMEOUT: &str = "30m";
/// DescribeTable's default policy rate (`dynamodb:control-plane-read`,
/// quota/src/defaults.rs): what the calls left at the outage's start need at least.
const DESCRIBE_RATE: f64 = 100.0;
/// How often the bench looks for the first DescribeTable to arm the window.
const ARM_POLL: Duration = Duration::from_millis(5);

/// What one run needs.
pub struct Setup<'a> {
    pub moto_url: &'a str,
    pub region: &'a str,
    pub tables: usize,
    pub processes: usize,
    pub window: Window,
    pub breakers: Breakers,
    pub dir: &'a Path,
}

/// What one run measured.
#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    pub breakers: Breakers,
    /// DescribeTable requests inside the window (server-side).
    pub into_outage: u64,
    /// Of them, per process.
    pub into_outage_per_process: Vec<u64>,
    /// Of them, in the window's first second.
    pub first_second: u64,
    /// Every DescribeTable the proxy received.
    pub describe_tables: u64,
    /// Every request by target.
    pub by_target: BTreeMap<String, u64>,
    /// DescribeTable calls not yet answered when the outage started (tables × processes
    /// less the ones moto answered before), and what they need at the policy rate.
    pub left_at_start: u64,
    pub left_at_start_ideal_s: f64,
    /// The first DescribeTable after the window's end (the recovery found), from the end.
    pub recovery_found_after_s: Option<f64>,
    /// The last process's exit minus the end of the window.
    pub completion_after_end_s: f64,
    /// Some process exited before the window ended: the run did not measure an outage.
    pub ended_before_outage: bool,
    /// Tables × processes minus the tables the reports list.
    pub items_lost: u64,
    /// Reports whose dynamodb-tables dataset is complete.
    pub complete_reports: usize,
    /// The 500s the processes' telemetry recorded, by attempt number (1: first attempt).
    pub failed_by_attempt: BTreeMap<u32, u64>,
    /// Each arrival in the window: seconds into the outage and the process (`12.3@1`).
    pub timeline: String,
}

/// One run: set-up (the proxy; each process's command), the run (spawned, the window
/// armed at the first DescribeTable, every exit waited for), then the figures.
pub fn run_once(setup: &Setup<'_>) -> anyhow::Result<RunResult> {
    let exe = crate::harness::exe::tollgate()?;
    let proxy = FaultProxy::start(setup.moto_url, setup.processes, setup.window)?;
    let spawned = Instant::now();
    let mut children = Vec::new();
    for (i, url) in proxy.urls.iter().enumerate() {
        let mut cmd = discover_command(setup, &exe, i, url)?;
        children.push(cmd.spawn().context("spawning tollgate discover")?);
    }
    let waits = exits::watch(children);
    // The outage's clock starts at the first DescribeTable.
    while proxy.describe_tables() == 0 && waits.iter().any(|w| !w.is_finished()) {
        std::thread::sleep(ARM_POLL);
    }
    proxy.arm();
    let ended = exits::join(waits);
    let armed = proxy.armed().unwrap_or(spawned);
    let outage_end = armed + setup.window.end();
    let last = ended.iter().map(|(_, at)| *at).max().unwrap_or(outage_end);
    let completion_after_end_s = if last >= outage_end {
        (last - outage_end).as_secs_f64()
    } else {
        -(outage_end - last).as_secs_f64()
    };
    let ended_before_outage = ended.iter().any(|(_, at)| *at < outage_end);
    for (i, (status, _)) in ended.iter().enumerate() {
        if status.is_none_or(|s| s.code().is_none()) {
            anyhow::bail!(
                "tollgate discover {i} did not exit normally ({status:?}); see {}",
                setup.dir.join(format!("process-{i}.log")).display()
            );
        }
    }

    let window = setup.window;
    let total = (setup.tables * setup.processes) as u64;
    let arrivals = proxy.arrivals();
    let inside: Vec<_> = arrivals.iter().filter(|a| window.contains(a.at)).collect();
    let mut per_process = vec![0u64; setup.processes];
    for a in &inside {
        per_process[a.process] += 1;
    }
    let first_second = inside
        .iter()
        .filter(|a| a.at < window.start + Duration::from_secs(1))
        .count() as u64;
    let answered_before = arrivals
        .iter()
        .filter(|a| !a.failed && a.at < window.start)
        .count() as u64;
    // Arming polls: the very first DescribeTable may come before it and is not recorded.
    let left_at_start = total.saturating_sub(answered_before + 1);
    let recovery_found_after_s = arrivals
        .iter()
        .find(|a| a.at >= window.end())
        .map(|a| (a.at - window.end()).as_secs_f64());
    let timeline = inside
        .iter()
        .map(|a| format!("{:.1}@{}", (a.at - window.start).as_secs_f64(), a.process))
        .collect::<Vec<_>>()
        .join(" ");
    let (listed, complete_reports, failed_by_attempt) = read_outputs(setup);
    Ok(RunResult {
        breakers: setup.breakers,
        into_outage: inside.len() as u64,
        into_outage_per_process: per_process,
        first_second,
        describe_tables: proxy.describe_tables(),
        by_target: proxy.by_target(),
        completion_after_end_s,
        ended_before_outage,
        left_at_start,
        left_at_start_ideal_s: left_at_start as f64 / DESCRIBE_RATE,
        recovery_found_after_s,
        items_lost: total - listed.min(total),
        complete_reports,
        failed_by_attempt,
        timeline,
    })
}

/// Process `i`'s `tollgate discover` through its proxy port `url`: default policies, no
/// fleet table, the breakers as the run asks.
fn discover_command(setup: &Setup<'_>, exe: &Path, i: usize, url: &str) -> anyhow::Result<Command> {
    let mut cmd = Command::new(exe);
    // `--no-tags`: the peers make no tagging call; both sides make the same calls.
    cmd.args([
        "discover",
        "--endpoint-url",
        url,
        "--regions",
        setup.region,
        "--no-tags",
    ])
    .args(["--datasets", "dynamodb-tables", "--timeout", SCAN_TIMEOUT])
    .arg("--output")
    .arg(setup.dir.join(format!("report-{i}.json")))
    .arg("--telemetry")
    .arg(setup.dir.join(format!("telemetry-{i}.jsonl")))
    .env("TOLLGATE_ADMISSION_DIR", setup.dir.join("admission"))
    .env("TOLLGATE_QUOTA_OVERRIDES", "")
    .env_remove("TOLLGATE_POLICY_FILE")
    .env_remove("TOLLGATE_FLEET_TABLE")
    .env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    .env("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    .env("AWS_REGION", setup.region)
    .env("AWS_EC2_METADATA_DISABLED", "true")
    .env_remove("AWS_PROFILE")
    .env_remove("AWS_SESSION_TOKEN")
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(std::fs::File::create(
        setup.dir.join(format!("process-{i}.log")),
    )?);
    match setup.breakers {
        Breakers::On => cmd.env_remove("TOLLGATE_BREAKERS"),
        Breakers::Off => cmd.env("TOLLGATE_BREAKERS", "off"),
    };
    Ok(cmd)
}

/// What the processes left behind: the tables their reports list, how many reports are
/// complete, and the 500s their telemetry recorded by attempt number.
fn read_outputs(setup: &Setup<'_>) -> (u64, usize, BTreeMap<u32, u64>) {
    let mut listed = 0u64;
    let mut complete_reports = 0;
    let mut failed_by_attempt = BTreeMap::new();
    for i in 0..setup.processes {
        let (n, complete) = read_report(&setup.dir.join(format!("report-{i}.json")));
        listed += n;
        complete_reports += usize::from(complete);
        read_failures(
            &setup.dir.join(format!("telemetry-{i}.jsonl")),
            &mut failed_by_attempt,
        );
    }
    (listed, complete_reports, failed_by_attempt)
}

/// The tables a report lists and whether its dynamodb-tables dataset is complete; a
/// missing or unreadable report lists none.
fn read_report(path: &Path) -> (u64, bool) {
    let Some(report) = std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
    else {
        return (0, false);
    };
    let Some(dataset) = report.pointer("/datasets/dynamodb-tables") else {
        return (0, false);
    };
    let items = dataset
        .get("items")
        .and_then(|i| i.as_array())
        .map_or(0, |i| i.len() as u64);
    let complete = dataset.get("status").and_then(|s| s.as_str()) == Some("complete");
    (items, complete)
}

/// Count the DescribeTable attempts answered 500 in one process's telemetry, by attempt
/// number.
fn read_failures(path: &Path, by_attempt: &mut BTreeMap<u32, u64>) {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    for line in text.lines() {
        let Ok(event) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let describe = event.get("operation").and_then(|o| o.as_str()) == Some("DescribeTable");
        let failed = event.get("statusCode").and_then(|s| s.as_u64()) == Some(500);
        if describe && failed {
            let attempt = event.get("attempt").and_then(|a| a.as_u64()).unwrap_or(1) as u32;
            *by_attempt.entry(attempt).or_default() += 1;
        }
    }
}
