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
//! server quotas allow for the K discoveries' calls, per region and server bucket (see
//! `ideal`).
//!
//! The bench fails loudly: a process that crashed or wrote no report makes it exit 1
//! after the table (its zeros would otherwise read as a result). The tollgate processes
//! run with TOLLGATE_QUOTA_OVERRIDES blanked, so that the default policies are what is
//! measured, unless `--keep-overrides`. Each process's pid is written to `pid-<i>` in
//! its mode's directory as it starts (tests kill one through it).

//!
//! # Layout
//! - `ideal`: the shortest completion the server quotas allow (`ideal_s`).
//! - `outage`: what each mode did around a scenario's outage.
//! - `process`: what one process did, read from what it left behind.
//! - `sdk`: the plain-SDK worker process (hidden subcommand `fleet-worker`).

#![allow(clippy::disallowed_methods)] // benchmarks measure wall-clock time

pub(crate) mod ideal;
mod outage;
mod process;
pub mod sdk;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use serde::Serialize;
use tollgate_sim::{Arrival, Scenario, Simulator, Stats};

use crate::fleet::outage::OutageFigures;
use crate::fleet::process::{failure, sdk_process, tollgate_process, ProcessResult, Worker};
use crate::harness::exits;

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
    /// sdk-standard with `max_attempts(6)` (twice the default attempts).
    SdkStandardMax6,
    /// sdk-adaptive with `max_attempts(6)`.
    SdkAdaptiveMax6,
    /// tollgate, sdk-standard and sdk-adaptive, one after the other.
    All,
    /// All five modes above, one after the other.
    Every,
}

impl FleetMode {
    /// The plain-SDK worker's retry mode and attempts; None for tollgate.
    fn sdk(self) -> Option<(&'static str, Option<u32>)> {
        match self {
            FleetMode::SdkStandard => Some(("sdk-standard", None)),
            FleetMode::SdkAdaptive => Some(("sdk-adaptive", None)),
            FleetMode::SdkStandardMax6 => Some(("sdk-standard", Some(6))),
            FleetMode::SdkAdaptiveMax6 => Some(("sdk-adaptive", Some(6))),
            FleetMode::Tollgate | FleetMode::All | FleetMode::Every => None,
        }
    }
}

/// What is required of each process of a run, or the bench fails (exit 1).
const LOUD: &str = "a process that crashed (ended by a signal, or a plain-SDK worker \
                    exiting non-zero) or wrote no report fails the bench";

/// Arguments of `tollgate bench fleet`.
#[derive(Debug, Args)]
pub struct FleetArgs {
    /// Processes per mode.
    #[arg(long, default_value_t = 4)]
    pub processes: usize,
    /// Scenario file (e.g. fixtures/scenarios/fleet.toml).
    #[arg(long, value_name = "FILE")]
    pub scenario: PathBuf,
    /// Which clients (comma-separated: several run one after the other).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "all")]
    pub mode: Vec<FleetMode>,
    /// Keep TOLLGATE_QUOTA_OVERRIDES from this environment for the tollgate processes
    /// (by default it is blanked, so that the policies measured are the defaults).
    #[arg(long)]
    pub keep_overrides: bool,
    /// Keep each process's report, telemetry and log in DIR (default: a temporary
    /// directory, removed).
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
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
    /// Only when the scenario has an outage (`outage`).
    #[serde(skip_serializing_if = "Option::is_none")]
    outage: Option<OutageFigures>,
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
    let tmp = tempfile::tempdir().context("creating a temporary directory")?;
    let root = match &args.keep {
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            dir.clone()
        }
        None => tmp.path().to_path_buf(),
    };
    let mut modes = Vec::new();
    for &m in &args.mode {
        let expanded = match m {
            FleetMode::All => vec![
                FleetMode::Tollgate,
                FleetMode::SdkStandard,
                FleetMode::SdkAdaptive,
            ],
            FleetMode::Every => vec![
                FleetMode::Tollgate,
                FleetMode::SdkStandard,
                FleetMode::SdkAdaptive,
                FleetMode::SdkStandardMax6,
                FleetMode::SdkAdaptiveMax6,
            ],
            m => vec![m],
        };
        for m in expanded {
            if !modes.contains(&m) {
                modes.push(m);
            }
        }
    }
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
        results.push(run_mode(
            &rt,
            &scenario,
            mode,
            k,
            &dir,
            args.keep_overrides,
        )?);
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
    let failed: Vec<String> = report
        .modes
        .iter()
        .flat_map(|m| {
            m.per_process.iter().enumerate().filter_map(move |(i, p)| {
                p.failure
                    .as_ref()
                    .map(|why| format!("{} process {i}: {why}", mode_name(m.mode)))
            })
        })
        .collect();
    if failed.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    for f in &failed {
        eprintln!("bench fleet: FAILED: {f}");
    }
    eprintln!("bench fleet: {LOUD}; its figures above are not valid");
    Ok(ExitCode::FAILURE)
}

fn mode_name(mode: FleetMode) -> &'static str {
    match mode {
        FleetMode::Tollgate => "tollgate",
        FleetMode::SdkStandard => "sdk-standard",
        FleetMode::SdkAdaptive => "sdk-adaptive",
        FleetMode::SdkStandardMax6 => "sdk-standard-max6",
        FleetMode::SdkAdaptiveMax6 => "sdk-adaptive-max6",
        FleetMode::All => "all",
        FleetMode::Every => "every",
    }
}

/// One mode: set-up (a fresh simulator on loopback, each process's command), one run
/// (K processes spawned, each exit waited for), then its row from what they left.
fn run_mode(
    rt: &tokio::runtime::Runtime,
    scenario: &Scenario,
    mode: FleetMode,
    k: usize,
    dir: &Path,
    keep_overrides: bool,
) -> anyhow::Result<ModeResult> {
    let simulator = Simulator::new(scenario.clone());
    let server = rt
        .block_on(simulator.serve(([127, 0, 0, 1], 0).into()))
        .context("starting the simulator on loopback")?;
    let launch = Launch {
        mode,
        exe: match mode.sdk() {
            None => crate::harness::exe::tollgate()?,
            Some(_) => crate::harness::exe::bench()?,
        },
        url: format!("http://{}", server.local_addr()),
        regions: scenario.regions.join(","),
        scenario,
        dir,
        keep_overrides,
    };

    // The fault windows and arrivals count from here, with the scan.
    simulator.reset();
    let started = Instant::now();
    let mut children = Vec::new();
    for i in 0..k {
        let child = launch
            .command(i)?
            .spawn()
            .context("spawning a fleet process")?;
        std::fs::write(dir.join(format!("pid-{i}")), child.id().to_string())?;
        children.push(child);
    }
    // Each process's own finish instant is recorded.
    let exits: Vec<(Option<ExitStatus>, Duration)> = exits::join(exits::watch(children))
        .into_iter()
        .map(|(status, at)| (status, at - started))
        .collect();
    let finished = Finished {
        completion: exits.iter().map(|(_, d)| *d).max().unwrap_or_default(),
        exits,
        stats: simulator.stats(),
        arrivals: simulator.arrivals(),
    };
    rt.block_on(server.shutdown());
    launch.result(k, finished)
}

/// What one mode's processes are started with.
struct Launch<'a> {
    mode: FleetMode,
    /// `tollgate`, or this executable for the plain-SDK worker.
    exe: PathBuf,
    /// The simulator's endpoint.
    url: String,
    /// The scenario's regions, comma-separated.
    regions: String,
    scenario: &'a Scenario,
    /// Where each process writes its report, telemetry, log and pid.
    dir: &'a Path,
    keep_overrides: bool,
}

/// What one mode's run left: each process's exit and time, the last one's, and the
/// simulator's counters and arrivals.
struct Finished {
    exits: Vec<(Option<ExitStatus>, Duration)>,
    completion: Duration,
    stats: Stats,
    arrivals: Vec<Arrival>,
}

impl Launch<'_> {
    /// Process `i`'s command: `tollgate discover` sharing the mode's admission directory,
    /// or a plain-SDK worker, both with the simulator's credentials.
    fn command(&self, i: usize) -> anyhow::Result<Command> {
        let dir = self.dir;
        let mut cmd = Command::new(&self.exe);
        match self.mode.sdk() {
            None => {
                // `--no-tags` and the four first datasets: the SDK peers make no tagging
                // and no EC2 call; same calls each side.
                cmd.args(["discover", "--no-tags", "--endpoint-url", &self.url])
                    .args([
                        "--types",
                        "s3-buckets,lambda-functions,dynamodb-tables,kms-keys",
                    ])
                    .args(["--regions", &self.regions])
                    .args(["--timeout", TOLLGATE_TIMEOUT, "--output"])
                    .arg(dir.join(format!("report-{i}.json")))
                    .arg("--telemetry")
                    .arg(dir.join(format!("telemetry-{i}.jsonl")))
                    .env("TOLLGATE_ADMISSION_DIR", dir.join("admission"));
                if !self.keep_overrides {
                    cmd.env("TOLLGATE_QUOTA_OVERRIDES", "");
                }
            }
            Some((sdk, max_attempts)) => {
                cmd.args([crate::harness::exe::FLEET_WORKER, "--mode", sdk])
                    .args(["--endpoint-url", &self.url])
                    .args(["--regions", &self.regions]);
                if let Some(n) = max_attempts {
                    cmd.args(["--max-attempts", &n.to_string()]);
                }
            }
        }
        let log = std::fs::File::create(dir.join(format!("process-{i}.log")))?;
        let stdout = std::fs::File::create(dir.join(format!("stdout-{i}.json")))?;
        cmd.env("AWS_ACCESS_KEY_ID", "AKIDSIMULATOR")
            .env("AWS_SECRET_ACCESS_KEY", "simulator-secret")
            .env("AWS_REGION", self.scenario.regions[0].as_str())
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env_remove("AWS_PROFILE")
            .env_remove("AWS_SESSION_TOKEN")
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(log);
        Ok(cmd)
    }

    /// The mode's row: each process read back from what it left, summed, against the
    /// ideal and (when the scenario has one) around the outage.
    fn result(&self, k: usize, finished: Finished) -> anyhow::Result<ModeResult> {
        let (scenario, mode) = (self.scenario, self.mode);
        let expected = scenario.inventory_counts();
        let items_expected =
            expected.buckets + expected.functions + expected.tables + expected.keys;
        let mut per_process = Vec::new();
        for (i, (status, elapsed)) in finished.exits.into_iter().enumerate() {
            let (mut p, reported) = match mode.sdk() {
                None => tollgate_process(self.dir, i, items_expected)?,
                Some(_) => sdk_process(self.dir, i, items_expected)?,
            };
            p.exit_code = status.and_then(|s| s.code());
            let worker = match mode.sdk() {
                Some(_) => Worker::PlainSdk,
                None => Worker::Tollgate,
            };
            p.failure = failure(status, reported, worker);
            p.elapsed_s = elapsed.as_secs_f64();
            per_process.push(p);
        }
        let ideal_s = crate::fleet::ideal::ideal_seconds(scenario, k);
        let completion_s = finished.completion.as_secs_f64();
        let sum = |f: fn(&ProcessResult) -> u64| per_process.iter().map(f).sum::<u64>();
        let outage = crate::fleet::outage::outage(scenario).map(|fault| {
            crate::fleet::outage::figures(
                fault,
                &finished.arrivals,
                items_expected * k as u64,
                sum(|p| p.items_complete),
                finished.completion,
                crate::fleet::outage::remaining_ideal(scenario, k, fault),
            )
        });
        let stats = finished.stats;
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
            outage,
        })
    }
}

fn print_table(report: &Report) {
    println!(
        "fleet benchmark: {} processes per mode, scenario {}",
        report.processes, report.scenario
    );
    println!(
        "{:<17} {:>8} {:>9} {:>10} {:>8} {:>8} {:>11} {:>8} {:>7} {:>9}",
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
            "{:<17} {:>8} {:>9} {:>10} {:>8} {:>8} {:>10.1}s {:>7.1}s {:>7.2} {:>6}/{}",
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
        println!("  {:<17} {}", mode_name(m.mode), items.join(" "));
    }
    print_outage(report);
    if let Some(r) = report.throttled_ratio_adaptive_to_tollgate {
        println!("throttled responses, sdk-adaptive / tollgate: {r:.1}×");
    }
}

/// The outage table, when the scenario has an outage.
fn print_outage(report: &Report) {
    let Some(first) = report.modes.iter().find_map(|m| m.outage.as_ref()) else {
        return;
    };
    println!(
        "outage from {:.0} s to {:.0} s (recovery); target: done within {:.0} s of the \
         recovery plus the remaining ideal",
        first.from_s,
        first.until_s,
        crate::fleet::outage::TARGET_SLACK_S
    );
    println!(
        "{:<17} {:>16} {:>14} {:>10} {:>18} {:>16} {:>7}",
        "mode",
        "attempts-in-it",
        "other-in-it",
        "items-lost",
        "recovery→done",
        "remaining-ideal",
        "target"
    );
    for m in &report.modes {
        let Some(o) = &m.outage else { continue };
        println!(
            "{:<17} {:>16} {:>14} {:>10} {:>17.1}s {:>15.1}s {:>7}",
            mode_name(m.mode),
            o.attempts_during,
            o.attempts_during_other,
            o.items_lost,
            o.recovery_to_completion_s,
            o.remaining_ideal_s,
            if o.within_target { "met" } else { "missed" }
        );
    }
}
