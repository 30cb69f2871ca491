//! `tollgate bench fleet`: K real processes discover the same simulated account through
//! one fixture simulator with server-side quotas, in up to three modes:
//! - `tollgate`: K `tollgate discover` processes sharing one admission directory (one
//!   becomes coordinator, the others its clients);
//! - `sdk-standard` / `sdk-adaptive`: K plain AWS SDK processes (`tollgate-bench fleet-worker`),
//!   each with the SDK's own retry strategy and nothing shared, as scanners run today.
//!
//! Each mode gets a fresh simulator (full server buckets, zeroed counters) on an
//! ephemeral loopback port. The server's counters are the ground truth for physical
//! attempts and throttled responses; each process reports its logical calls, retries,
//! calls given up and how complete its datasets are. `ideal_s` is the shortest time the
//! server quotas allow for the K discoveries' calls: max over operations of
//! (K·calls − burst) / rate.

#![allow(clippy::disallowed_methods)] // benchmarks measure wall-clock time

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use serde::Serialize;
use tollgate_sim::{Scenario, Simulator};

use crate::fleet_sdk::FleetWorkerReport;

/// Longest a tollgate process may run before the bench calls it failed.
const TOLLGATE_TIMEOUT: &str = "30m";

/// Which clients a fleet run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FleetMode {
    /// K `tollgate discover` processes sharing one admission directory.
    Tollgate,
    /// K plain SDK processes with standard retry.
    SdkStandard,
    /// K plain SDK processes with adaptive retry.
    SdkAdaptive,
    /// The three above, one after the other.
    All,
}

/// Arguments of `tollgate bench fleet`.
#[derive(Debug, Args)]
pub struct FleetArgs {
    /// Processes per mode.
    #[arg(long, default_value_t = 4)]
    pub processes: usize,
    /// Scenario file (e.g. fixtures/scenarios/fleet.toml).
    #[arg(long, value_name = "FILE")]
    pub scenario: PathBuf,
    /// Which clients.
    #[arg(long, value_enum, default_value_t = FleetMode::All)]
    pub mode: FleetMode,
    /// Keep each process's report, telemetry and log in DIR (default: a temporary
    /// directory, removed).
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// One process's view of its run.
#[derive(Debug, Default, Clone, Serialize)]
struct ProcessResult {
    logical_requests: u64,
    attempts: u64,
    retries: u64,
    gave_up_calls: u64,
    /// Items fully read / items in the scenario, over the four datasets.
    items_complete: u64,
    /// Every dataset complete, with every item of the scenario.
    complete: bool,
    exit_code: Option<i32>,
    elapsed_s: f64,
}

/// One mode's row.
#[derive(Debug, Clone, Serialize)]
struct ModeResult {
    mode: FleetMode,
    processes: usize,
    logical_requests: u64,
    physical_attempts: u64,
    throttled_responses: u64,
    retries: u64,
    gave_up_calls: u64,
    completion_s: f64,
    ideal_s: f64,
    completion_vs_ideal: f64,
    complete_processes: usize,
    items_expected_per_process: u64,
    per_process: Vec<ProcessResult>,
    server_per_operation: BTreeMap<String, ServerOp>,
}

#[derive(Debug, Clone, Serialize)]
struct ServerOp {
    received: u64,
    throttled: u64,
}

#[derive(Debug, Serialize)]
struct Report {
    scenario: String,
    processes: usize,
    modes: Vec<ModeResult>,
    /// sdk-adaptive's throttled responses over tollgate's (when both ran).
    throttled_ratio_adaptive_to_tollgate: Option<f64>,
}

/// Run the fleet benchmark.
pub fn run(args: &FleetArgs) -> anyhow::Result<ExitCode> {
    let scenario = Scenario::load(&args.scenario)
        .with_context(|| format!("loading the scenario {}", args.scenario.display()))?;
    let k = args.processes.max(1);
    if scenario.regions.len() > 1 {
        eprintln!(
            "bench fleet: the scenario has {} regions; ideal_s treats each operation's \
             server buckets as one (an overestimate of the ideal)",
            scenario.regions.len()
        );
    }
    let tmp = tempfile::tempdir().context("creating a temporary directory")?;
    let root = match &args.keep {
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            dir.clone()
        }
        None => tmp.path().to_path_buf(),
    };
    let modes = match args.mode {
        FleetMode::All => vec![
            FleetMode::Tollgate,
            FleetMode::SdkStandard,
            FleetMode::SdkAdaptive,
        ],
        m => vec![m],
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("starting the simulator's runtime")?;
    let mut results = Vec::new();
    for mode in modes {
        let dir = root.join(mode_name(mode));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        eprintln!("bench fleet: {} × {k} ...", mode_name(mode));
        results.push(run_mode(&rt, &scenario, mode, k, &dir)?);
    }
    let throttled = |m: FleetMode| {
        results
            .iter()
            .find(|r| r.mode == m)
            .map(|r| r.throttled_responses)
    };
    let ratio = match (
        throttled(FleetMode::SdkAdaptive),
        throttled(FleetMode::Tollgate),
    ) {
        (Some(a), Some(t)) => Some(a as f64 / t.max(1) as f64),
        _ => None,
    };
    let report = Report {
        scenario: args.scenario.display().to_string(),
        processes: k,
        modes: results,
        throttled_ratio_adaptive_to_tollgate: ratio,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_table(&report);
    }
    Ok(ExitCode::SUCCESS)
}

fn mode_name(mode: FleetMode) -> &'static str {
    match mode {
        FleetMode::Tollgate => "tollgate",
        FleetMode::SdkStandard => "sdk-standard",
        FleetMode::SdkAdaptive => "sdk-adaptive",
        FleetMode::All => "all",
    }
}

/// The shortest time the server quotas allow for `k` discoveries: per server bucket
/// (operations may share one), (k·calls − burst) / rate; the slowest bucket decides.
/// Server buckets are per region; the fleet scenarios use one region, and with several
/// this figure sums their calls into one bucket (an overestimate), which the table says.
fn ideal_seconds(scenario: &Scenario, k: usize) -> f64 {
    let mut per_bucket: BTreeMap<&str, u64> = BTreeMap::new();
    let calls = scenario.expected_calls();
    for (op, n) in &calls {
        *per_bucket.entry(scenario.quota_bucket(op)).or_default() += n;
    }
    calls
        .keys()
        .map(|op| {
            let (rate, burst) = scenario.server_quota(op);
            let total = per_bucket[scenario.quota_bucket(op)] as f64 * k as f64;
            (total - f64::from(burst)).max(0.0) / rate
        })
        .fold(0.0, f64::max)
}

fn run_mode(
    rt: &tokio::runtime::Runtime,
    scenario: &Scenario,
    mode: FleetMode,
    k: usize,
    dir: &Path,
) -> anyhow::Result<ModeResult> {
    let simulator = Simulator::new(scenario.clone());
    let server = rt
        .block_on(simulator.serve(([127, 0, 0, 1], 0).into()))
        .context("starting the simulator on loopback")?;
    let url = format!("http://{}", server.local_addr());
    let regions = scenario.regions.join(",");
    let exe = match mode {
        FleetMode::Tollgate => crate::exe::tollgate()?,
        _ => crate::exe::bench()?,
    };
    let admission = dir.join("admission");

    let started = Instant::now();
    let mut children = Vec::new();
    for i in 0..k {
        let mut cmd = Command::new(&exe);
        match mode {
            FleetMode::Tollgate => {
                cmd.args(["discover", "--endpoint-url", &url, "--regions", &regions])
                    .args(["--timeout", TOLLGATE_TIMEOUT, "--output"])
                    .arg(dir.join(format!("report-{i}.json")))
                    .arg("--telemetry")
                    .arg(dir.join(format!("telemetry-{i}.jsonl")))
                    .env("TOLLGATE_ADMISSION_DIR", &admission);
            }
            FleetMode::SdkStandard | FleetMode::SdkAdaptive => {
                let sdk = if mode == FleetMode::SdkStandard {
                    "sdk-standard"
                } else {
                    "sdk-adaptive"
                };
                cmd.args([crate::exe::FLEET_WORKER, "--mode", sdk])
                    .args(["--endpoint-url", &url])
                    .args(["--regions", &regions]);
            }
            FleetMode::All => unreachable!("expanded by run"),
        }
        let log = std::fs::File::create(dir.join(format!("process-{i}.log")))?;
        let stdout = std::fs::File::create(dir.join(format!("stdout-{i}.json")))?;
        cmd.env("AWS_ACCESS_KEY_ID", "AKIDSIMULATOR")
            .env("AWS_SECRET_ACCESS_KEY", "simulator-secret")
            .env("AWS_REGION", scenario.regions[0].as_str())
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env_remove("AWS_PROFILE")
            .env_remove("AWS_SESSION_TOKEN")
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(log);
        children.push(cmd.spawn().context("spawning a fleet process")?);
    }
    // Wait in threads so each process's own finish instant is recorded.
    let waits: Vec<_> = children
        .into_iter()
        .map(|mut child| {
            std::thread::spawn(move || {
                let status = child.wait();
                (status.ok().and_then(|s| s.code()), started.elapsed())
            })
        })
        .collect();
    let finished: Vec<(Option<i32>, Duration)> = waits
        .into_iter()
        .map(|w| w.join().expect("wait thread"))
        .collect();
    let completion = finished.iter().map(|(_, d)| *d).max().unwrap_or_default();
    let stats = simulator.stats();
    rt.block_on(server.shutdown());

    let expected = scenario.inventory_counts();
    let items_expected = expected.buckets + expected.functions + expected.tables + expected.keys;
    let mut per_process = Vec::new();
    for (i, (code, elapsed)) in finished.into_iter().enumerate() {
        let mut p = match mode {
            FleetMode::Tollgate => tollgate_process(dir, i, items_expected)?,
            _ => sdk_process(dir, i, items_expected)?,
        };
        p.exit_code = code;
        p.elapsed_s = elapsed.as_secs_f64();
        per_process.push(p);
    }
    let ideal_s = ideal_seconds(scenario, k);
    let completion_s = completion.as_secs_f64();
    let sum = |f: fn(&ProcessResult) -> u64| per_process.iter().map(f).sum::<u64>();
    Ok(ModeResult {
        mode,
        processes: k,
        logical_requests: sum(|p| p.logical_requests),
        physical_attempts: stats.totals.received,
        throttled_responses: stats.totals.throttled,
        retries: sum(|p| p.retries),
        gave_up_calls: sum(|p| p.gave_up_calls),
        completion_s,
        ideal_s,
        completion_vs_ideal: if ideal_s > 0.0 {
            completion_s / ideal_s
        } else {
            f64::NAN
        },
        complete_processes: per_process.iter().filter(|p| p.complete).count(),
        items_expected_per_process: items_expected,
        per_process,
        server_per_operation: stats
            .per_operation
            .iter()
            .map(|(op, s)| {
                (
                    op.clone(),
                    ServerOp {
                        received: s.received,
                        throttled: s.throttled,
                    },
                )
            })
            .collect(),
    })
}

/// A tollgate process: its report says how complete each dataset is, its telemetry how
/// many calls and attempts it made.
fn tollgate_process(dir: &Path, i: usize, items_expected: u64) -> anyhow::Result<ProcessResult> {
    let mut p = ProcessResult::default();
    let telemetry = dir.join(format!("telemetry-{i}.jsonl"));
    let text = std::fs::read_to_string(&telemetry).unwrap_or_default();
    for line in text.lines() {
        let Ok(event) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let field = |name: &str| event.get(name).and_then(|v| v.as_str()).unwrap_or("");
        let attempt = event.get("attempt").and_then(|v| v.as_u64()).unwrap_or(1);
        let dispatched = event.get("dispatched").and_then(|v| v.as_bool()) == Some(true);
        if dispatched {
            p.attempts += 1;
            if attempt > 1 {
                p.retries += 1;
            }
        }
        let retry_outcome = field("retryOutcome");
        let last = !matches!(retry_outcome, "retry" | "reprepare");
        if last {
            p.logical_requests += 1;
            let data_answer = field("errorCode") == "NoSuchLifecycleConfiguration";
            if retry_outcome != "done" && !data_answer {
                p.gave_up_calls += 1;
            }
        }
    }
    let report_path = dir.join(format!("report-{i}.json"));
    if let Ok(text) = std::fs::read_to_string(&report_path) {
        let report: serde_json::Value = serde_json::from_str(&text)
            .with_context(|| format!("parsing {}", report_path.display()))?;
        let mut all_complete = true;
        if let Some(datasets) = report.get("datasets").and_then(|d| d.as_object()) {
            for dataset in datasets.values() {
                let complete = dataset.get("status").and_then(|s| s.as_str()) == Some("complete");
                all_complete &= complete;
                if complete {
                    p.items_complete += dataset
                        .get("items")
                        .and_then(|i| i.as_array())
                        .map_or(0, |i| i.len() as u64);
                }
            }
        } else {
            all_complete = false;
        }
        p.complete = all_complete && p.items_complete == items_expected;
    }
    Ok(p)
}

/// A plain-SDK process: its one-line JSON summary.
fn sdk_process(dir: &Path, i: usize, items_expected: u64) -> anyhow::Result<ProcessResult> {
    let path = dir.join(format!("stdout-{i}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let Some(report) = text
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str::<FleetWorkerReport>(l).ok())
    else {
        return Ok(ProcessResult::default());
    };
    let logical: u64 = report.operations.values().map(|o| o.calls).sum();
    let items = report.buckets_complete
        + report.functions_complete
        + report.tables_complete
        + report.keys_complete;
    Ok(ProcessResult {
        logical_requests: logical,
        attempts: report.attempts,
        retries: report.attempts.saturating_sub(logical),
        gave_up_calls: report.operations.values().map(|o| o.gave_up).sum(),
        items_complete: items,
        complete: items == items_expected && report.listings_failed == 0,
        exit_code: None,
        elapsed_s: report.elapsed_s,
    })
}

fn print_table(report: &Report) {
    println!(
        "fleet benchmark: {} processes per mode, scenario {}",
        report.processes, report.scenario
    );
    println!(
        "{:<13} {:>8} {:>9} {:>10} {:>8} {:>8} {:>11} {:>8} {:>7} {:>9}",
        "mode",
        "logical",
        "attempts",
        "throttled",
        "retries",
        "gave-up",
        "completion",
        "ideal",
        "×ideal",
        "complete"
    );
    for m in &report.modes {
        println!(
            "{:<13} {:>8} {:>9} {:>10} {:>8} {:>8} {:>10.1}s {:>7.1}s {:>7.2} {:>6}/{}",
            mode_name(m.mode),
            m.logical_requests,
            m.physical_attempts,
            m.throttled_responses,
            m.retries,
            m.gave_up_calls,
            m.completion_s,
            m.ideal_s,
            m.completion_vs_ideal,
            m.complete_processes,
            m.processes
        );
    }
    println!("per process (items fully read of {} expected):", {
        report
            .modes
            .first()
            .map_or(0, |m| m.items_expected_per_process)
    });
    for m in &report.modes {
        let items: Vec<String> = m
            .per_process
            .iter()
            .map(|p| format!("{}", p.items_complete))
            .collect();
        println!("  {:<13} {}", mode_name(m.mode), items.join(" "));
    }
    if let Some(r) = report.throttled_ratio_adaptive_to_tollgate {
        println!("throttled responses, sdk-adaptive / tollgate: {r:.1}×");
    }
}
