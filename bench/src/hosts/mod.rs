//! `tollgate bench hosts`: H simulated hosts share one key's quota through one DynamoDB
//! table (issue 13), and the bench checks the fleet-wide token-bucket bound from the grant
//! logs of every process on every host.
//!
//! A host here is what a real one has: its own admission directory and its own
//! coordinator, a `tollgate serve --listen 127.0.0.1:0` with its own TOLLGATE_STATE_DIR
//! (a dedicated process rather than an elected worker, so that `--kill-host` kills a
//! coordinator and no worker's requests with it), and P `tollgate-bench worker` processes
//! that are its clients over its socket. Only the coordinators talk to DynamoDB, through
//! a counting proxy (`dynamo_proxy`) in front of the table's endpoint: a dynalite this
//! bench starts, or `--endpoint-url`. The table is created by `tollgate fleet init`.
//! Workers get the fleet variables too: after `--kill-host` one of the killed host's
//! workers is elected its coordinator, as on a real host, and must join the fleet.
//!
//! `--no-fleet` is the control: the same hosts without the table, each with the key's
//! whole budget. The bound check must then fail (exit 1): that is how we know it can.

//!
//! # Layout
//! - `table`: the shared table (dynalite or `--endpoint-url`, the proxy, `fleet init`).
//! - `dynalite`: the emulator this bench starts for itself.
//! - `dynamo_proxy`: the counting proxy in front of the table's endpoint.
//! - `bucket_bound`: the fleet-wide token-bucket bound, checked from the grant logs.
//! - `policy_files`: `--policy-file` / `--policy-file-for`: schedules and allowances per
//!   host, the strictest policy and the allowance the logs are checked against.
//! - `request_phases`: the proxy's timeline split into start-up, first seconds and steady
//!   state, by request kind with the lost conditional writes.

#![allow(clippy::disallowed_methods)] // benchmarks measure wall-clock time

mod bucket_bound;
mod dynalite;
mod dynamo_proxy;
mod policy_files;
mod request_phases;
mod table;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use serde::Serialize;
use tollgate_actors::clock::unix_now;

use crate::harness::coordinator::DedicatedCoordinator;
use crate::harness::stats::Row;
use crate::harness::worker::{bench_policy, GrantLine, WorkerReport};
use crate::harness::worker::{collect_reports, span_s};
use crate::hosts::bucket_bound::BoundCheck;
use crate::hosts::policy_files::{grants_per_period, HostPolicies, PeriodCount};
use crate::hosts::table::{apply, Env, FleetTable};

/// Time given to the workers to start and connect before they all begin.
const START_DELAY: Duration = Duration::from_millis(800);
/// The fleet's clock-skew bound when TOLLGATE_FLEET_SKEW_MS is unset (issue 13).
const DEFAULT_SKEW_MS: u64 = 1_000;

/// Arguments of `tollgate bench hosts`.
#[derive(Debug, Args)]
pub struct HostsArgs {
    /// Simulated hosts, each its own admission directory and coordinator.
    #[arg(long, default_value_t = 4)]
    pub hosts: usize,
    /// Worker processes per host.
    #[arg(long, default_value_t = 2)]
    pub processes: usize,
    /// The shared key's rate per second (for the whole fleet).
    #[arg(long, default_value_t = 20.0)]
    pub rate: f64,
    /// The shared key's burst.
    #[arg(long, default_value_t = 5.0)]
    pub burst: f64,
    /// Admissions per worker process.
    #[arg(long, default_value_t = 50)]
    pub requests: usize,
    /// The table's endpoint (an emulator's http:// URL); default: a dynalite this bench
    /// starts from .node/ (scripts/dynalite.sh installs it).
    #[arg(long, value_name = "URL")]
    pub endpoint_url: Option<String>,
    /// SIGKILL host 0's coordinator halfway through the ideal run time.
    #[arg(long)]
    pub kill_host: bool,
    /// Write one JSON line per admission to DIR/host-<h>-worker-<i>.jsonl.
    #[arg(long, value_name = "DIR")]
    pub log: Option<PathBuf>,
    /// Make the table unreachable (the proxy closes every connection) from START seconds
    /// after the workers begin, for DURATION seconds: a degraded-mode run.
    #[arg(long, value_name = "START:DURATION", value_parser = parse_outage)]
    pub outage: Option<(f64, f64)>,
    /// Control run: no fleet table, every host has the key's whole budget (the bound
    /// check is expected to fail).
    #[arg(long)]
    pub no_fleet: bool,
    /// A policy file (TOLLGATE_POLICY_FILE's TOML or JSON, schedules and allowances
    /// included) for every host; the shared key is `bench:Shared` in it, and its
    /// `ratePerSecond`/`burst` there win over --rate/--burst.
    #[arg(long, value_name = "FILE")]
    pub policy_file: Option<PathBuf>,
    /// A policy file for host HOST (from 0) instead of --policy-file; repeatable, so
    /// hosts that disagree can be benchmarked.
    #[arg(long, value_name = "HOST=FILE", value_parser = policy_files::parse_policy_for)]
    pub policy_file_for: Vec<(usize, PathBuf)>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Serialize)]
struct Report {
    hosts: usize,
    processes_per_host: usize,
    requests_per_process: usize,
    rate_per_second: f64,
    burst: f64,
    fleet: bool,
    table: Option<String>,
    killed_host: Option<usize>,
    killed_pid: Option<u32>,
    outage: Option<(f64, f64)>,
    admissions: usize,
    admissions_per_host: Vec<usize>,
    elapsed_s: f64,
    ideal_s: f64,
    elapsed_ratio_to_ideal: f64,
    bucket_bound_ok: bool,
    worst_window: u64,
    window_limit: f64,
    worst_window_s: f64,
    skew_ms: u64,
    skew_term: f64,
    dynamodb_requests: Option<u64>,
    dynamodb_requests_per_admission: Option<f64>,
    dynamodb_requests_per_s: Option<f64>,
    dynamodb_requests_by_target: BTreeMap<String, u64>,
    /// The requests by phase (start-up, the first seconds, steady state to the last
    /// grant), by kind, with the conditional writes lost to another host.
    #[serde(skip_serializing_if = "Option::is_none")]
    dynamodb_phases: Option<request_phases::Phases>,
    /// The allowance in force (the smallest any host's policy file declares), and the
    /// merged grant logs counted per period of it.
    #[serde(skip_serializing_if = "Option::is_none")]
    allowance_amount: Option<u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    grants_per_period: Vec<PeriodCount>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_grants_per_period: Option<u64>,
    admission_p50_us: f64,
    admission_p99_us: f64,
    admission_max_us: f64,
    load_average: Option<String>,
}

/// One run: set-up (`HostsRun`: the table, a coordinator per host), the workers spawned
/// and waited for (host 0's coordinator killed or the table cut off on the way if asked),
/// then the report from the merged grant logs and the proxy's counts.
pub fn run(args: &HostsArgs) -> anyhow::Result<ExitCode> {
    let mut setup = HostsRun::start(args)?;
    let admissions_total = args.hosts * args.processes * args.requests;
    let strictest = setup.policies.strictest();
    let ideal_s = policy_files::ideal_s(admissions_total, strictest, setup.policies.allowance());
    let start_at = unix_now().as_micros() + START_DELAY.as_micros() as u64;
    let children = setup.spawn_workers(args, start_at)?;
    // A run that takes 4× its ideal (and a minute more) is stuck: its workers are killed.
    let limit = Duration::from_secs_f64(ideal_s * 4.0 + 60.0) + START_DELAY;
    let guard = Deadline::arm(children.iter().map(|c| c.id()).collect(), limit);
    let outage = match (&setup.table, args.outage) {
        (Some(t), Some((from_s, for_s))) => Some(t.outage(start_at, from_s, for_s)),
        (None, Some(_)) => anyhow::bail!("--outage needs the fleet table: drop --no-fleet"),
        _ => None,
    };
    let killed = match args.kill_host {
        true => Some(setup.kill_host_0(start_at + (ideal_s / 2.0 * 1e6) as u64)?),
        false => None,
    };
    let reports = collect_reports(children);
    guard.disarm();
    if let Some(outage) = outage {
        let _ = outage.join();
    }
    let reports = reports?;
    setup.stop_coordinators()?;
    let grants = read_logs(&setup.logs)?;
    let instants: Vec<u64> = grants.iter().map(|g| g.granted_at_us).collect();
    // The fleet promises the strictest of the hosts' policies.
    let check = bucket_bound::check(
        &instants,
        strictest.rate_per_second(),
        strictest.burst(),
        setup.skew_ms as f64 / 1e3,
    );
    let requests = setup.table.as_ref().map(|t| t.requests());
    let mut report = build_report(
        args,
        &reports,
        &grants,
        check,
        ideal_s,
        setup.skew_ms,
        killed,
        setup.table.as_ref(),
        requests,
    );
    setup.add_policy_and_phase_figures(&mut report, &grants, start_at);
    drop(setup.table.take());
    let failures = failures(&report, admissions_total);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_text(&report);
    }
    for f in &failures {
        eprintln!("bench hosts: FAILED: {f}");
    }
    Ok(if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// What a `bench hosts` run needs, and what it started. Dropped, it stops what is left in
/// the order the run would: the coordinators (killed), the table (its proxy and dynalite),
/// then the temporary directory.
struct HostsRun {
    /// One per host; `None` once killed (`--kill-host`) or stopped.
    coordinators: Vec<Option<DedicatedCoordinator>>,
    /// `None` with `--no-fleet`, or once the run has read its counts.
    table: Option<FleetTable>,
    policies: HostPolicies,
    /// The environment every process of every host gets (the table's, or none).
    env: Env,
    /// The fleet's clock-skew bound the check allows for.
    skew_ms: u64,
    /// Where the workers write their grant logs.
    logs: PathBuf,
    /// This executable, the workers'.
    bench: PathBuf,
    tmp: tempfile::TempDir,
}

impl HostsRun {
    /// Validate the arguments, create the table (unless `--no-fleet`) and start every
    /// host's coordinator.
    fn start(args: &HostsArgs) -> anyhow::Result<HostsRun> {
        anyhow::ensure!(args.hosts >= 1, "--hosts must be at least 1");
        anyhow::ensure!(args.processes >= 1, "--processes must be at least 1");
        anyhow::ensure!(args.requests >= 1, "--requests must be at least 1");
        anyhow::ensure!(
            args.rate > 0.0,
            "--rate must be a positive rate: the bench checks a finite bucket"
        );
        let fallback = bench_policy(args.rate, args.burst)?;
        let policies = HostPolicies::new(
            args.hosts,
            args.policy_file.as_ref(),
            &args.policy_file_for,
            fallback,
        )?;
        let skew_ms = skew_ms()?;
        let tmp = tempfile::tempdir().context("creating a temporary directory")?;
        let logs = match &args.log {
            Some(dir) => prepare_log_dir(dir)?,
            None => {
                let dir = tmp.path().join("logs");
                std::fs::create_dir(&dir)?;
                dir
            }
        };
        let table = match args.no_fleet {
            true => None,
            false => Some(FleetTable::create(args.endpoint_url.as_deref())?),
        };
        let env = match &table {
            Some(t) => t.host_env(),
            None => FleetTable::no_fleet_env(),
        };
        let tollgate = crate::harness::exe::tollgate()?;
        let mut run = HostsRun {
            coordinators: Vec::with_capacity(args.hosts),
            table,
            policies,
            env,
            skew_ms,
            logs,
            bench: crate::harness::exe::bench()?,
            tmp,
        };
        for h in 0..args.hosts {
            let dir = run.admission_dir(h);
            std::fs::create_dir_all(dir.parent().expect("a host directory"))?;
            let coordinator =
                DedicatedCoordinator::start_with_env(&tollgate, &dir, &run.host_env(h))
                    .with_context(|| format!("starting host {h}'s coordinator"))?;
            run.coordinators.push(Some(coordinator));
        }
        Ok(run)
    }

    /// Host `h`'s admission directory.
    fn admission_dir(&self, h: usize) -> PathBuf {
        self.tmp.path().join(format!("host-{h}")).join("admission")
    }

    /// Host `h`'s environment: the run's, with its policy file if it has one.
    fn host_env(&self, h: usize) -> Env {
        let mut env = self.env.clone();
        if let Some(file) = self.policies.file(h) {
            let file = std::path::absolute(file).unwrap_or_else(|_| file.clone());
            env.push((
                "TOLLGATE_POLICY_FILE".into(),
                Some(file.display().to_string()),
            ));
        }
        env
    }

    /// Every host's P workers, all beginning at `start_at` (µs since the epoch).
    fn spawn_workers(
        &self,
        args: &HostsArgs,
        start_at: u64,
    ) -> anyhow::Result<Vec<std::process::Child>> {
        let mut children = Vec::new();
        for h in 0..args.hosts {
            let dir = self.admission_dir(h);
            let policy = self.policies.policy(h);
            for i in 0..args.processes {
                let mut cmd = Command::new(&self.bench);
                apply(&mut cmd, &self.host_env(h));
                cmd.arg(crate::harness::exe::WORKER)
                    .arg("--dir")
                    .arg(&dir)
                    .args(["--requests", &args.requests.to_string()])
                    .args(["--rate", &policy.rate_per_second().to_string()])
                    .args(["--burst", &policy.burst().to_string()])
                    .args(["--start-at-us", &start_at.to_string()])
                    .args(["--host", &h.to_string()])
                    .arg("--log")
                    .arg(self.logs.join(format!("host-{h}-worker-{i}.jsonl")))
                    .stdout(Stdio::piped())
                    .stderr(Stdio::inherit());
                children.push(cmd.spawn().context("spawning a bench worker")?);
            }
        }
        Ok(children)
    }

    /// SIGKILL host 0's coordinator at `kill_at` (µs since the epoch); its pid.
    fn kill_host_0(&mut self, kill_at: u64) -> anyhow::Result<u32> {
        let now = unix_now().as_micros();
        if kill_at > now {
            std::thread::sleep(Duration::from_micros(kill_at - now));
        }
        let victim = self.coordinators[0].take().expect("host 0's coordinator");
        let pid = victim.pid();
        victim.kill()?;
        Ok(pid)
    }

    /// SIGTERM every coordinator still running and wait for it.
    fn stop_coordinators(&mut self) -> anyhow::Result<()> {
        for (h, c) in self.coordinators.iter_mut().enumerate() {
            if let Some(c) = c.take() {
                c.stop()
                    .with_context(|| format!("stopping host {h}'s coordinator"))?;
            }
        }
        Ok(())
    }

    /// The figures only the table and the policy files give: the proxy's requests by
    /// phase, the strictest policy's rate and burst, grants per allowance period.
    fn add_policy_and_phase_figures(
        &self,
        report: &mut Report,
        grants: &[GrantLine],
        start_at: u64,
    ) {
        if let Some(t) = &self.table {
            let seen = t.seen();
            let end_us = grants.last().map_or(start_at, |g| g.granted_at_us);
            report.dynamodb_phases = Some(request_phases::split(
                &seen.timeline,
                &seen.conditional_failures,
                start_at,
                end_us,
            ));
        }
        let strictest = self.policies.strictest();
        report.rate_per_second = strictest.rate_per_second();
        report.burst = strictest.burst();
        if let Some(allowance) = self.policies.allowance() {
            report.grants_per_period = grants_per_period(allowance, grants);
            report.allowance_amount = Some(allowance.amount());
            report.max_grants_per_period = report.grants_per_period.iter().map(|p| p.grants).max();
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn build_report(
    args: &HostsArgs,
    reports: &[WorkerReport],
    grants: &[GrantLine],
    check: BoundCheck,
    ideal_s: f64,
    skew_ms: u64,
    killed: Option<u32>,
    table: Option<&FleetTable>,
    requests: Option<BTreeMap<String, u64>>,
) -> Report {
    let latencies = reports
        .iter()
        .flat_map(|r| r.latencies_us.iter().map(|&u| Duration::from_micros(u)))
        .collect();
    let row = Row::new("admission", latencies, None);
    let elapsed_s = span_s(reports);
    let admissions = grants.len();
    let mut per_host = vec![0; args.hosts];
    for g in grants {
        if let Some(slot) = g.host.and_then(|h| per_host.get_mut(h)) {
            *slot += 1;
        }
    }
    let total = requests.as_ref().map(|r| r.values().sum::<u64>());
    Report {
        hosts: args.hosts,
        processes_per_host: args.processes,
        requests_per_process: args.requests,
        rate_per_second: args.rate,
        burst: args.burst,
        fleet: table.is_some(),
        table: table.map(|t| t.name.clone()),
        killed_host: killed.map(|_| 0),
        killed_pid: killed,
        outage: args.outage,
        admissions,
        admissions_per_host: per_host,
        elapsed_s,
        ideal_s,
        elapsed_ratio_to_ideal: if ideal_s > 0.0 {
            elapsed_s / ideal_s
        } else {
            0.0
        },
        bucket_bound_ok: check.ok,
        worst_window: check.worst_window,
        window_limit: check.window_limit,
        worst_window_s: check.worst_window_s,
        skew_ms,
        skew_term: check.skew_term,
        dynamodb_requests: total,
        dynamodb_requests_per_admission: total.map(|t| t as f64 / admissions.max(1) as f64),
        dynamodb_requests_per_s: total.map(|t| {
            if elapsed_s > 0.0 {
                t as f64 / elapsed_s
            } else {
                0.0
            }
        }),
        dynamodb_requests_by_target: requests.unwrap_or_default(),
        dynamodb_phases: None,
        allowance_amount: None,
        grants_per_period: Vec::new(),
        max_grants_per_period: None,
        admission_p50_us: row.p50_us,
        admission_p99_us: row.p99_us,
        admission_max_us: row.max_us,
        load_average: std::fs::read_to_string("/proc/loadavg")
            .ok()
            .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" ")),
    }
}

/// What makes the run fail: the fleet-wide bound broken, or grants missing from the logs.
fn failures(report: &Report, expected: usize) -> Vec<String> {
    let mut out = Vec::new();
    if !report.bucket_bound_ok {
        out.push(format!(
            "{} grants in {:.3} s, above the bucket bound burst + rate·T + rate·skew = {} + {}·{:.3} + {:.1} = {:.1}{}",
            report.worst_window,
            report.worst_window_s,
            report.burst,
            report.rate_per_second,
            report.worst_window_s,
            report.skew_term,
            report.window_limit,
            if report.fleet { "" } else { " (expected: --no-fleet gives every host the whole budget)" }
        ));
    }
    if let (Some(amount), Some(max)) = (report.allowance_amount, report.max_grants_per_period) {
        if max > amount {
            out.push(format!(
                "{max} grants in one allowance period, above its amount {amount}"
            ));
        }
    }
    if report.admissions != expected {
        out.push(format!(
            "the grant logs hold {} admissions, {expected} were requested",
            report.admissions
        ));
    }
    out
}

fn print_text(r: &Report) {
    println!(
        "{} hosts x {} processes x {} admissions on one key at {}/s burst {} ({}){}",
        r.hosts,
        r.processes_per_host,
        r.requests_per_process,
        r.rate_per_second,
        r.burst,
        r.table.as_deref().map_or(
            "no fleet table: every host has the whole budget".into(),
            |t| format!("fleet table {t}")
        ),
        r.killed_pid.map_or(String::new(), |p| format!(
            ", host 0's coordinator (pid {p}) SIGKILLed mid-run"
        ))
    );
    println!(
        "admissions {} (per host {:?}) in {:.3} s, ideal {:.3} s ({:.2}x)",
        r.admissions, r.admissions_per_host, r.elapsed_s, r.ideal_s, r.elapsed_ratio_to_ideal
    );
    println!(
        "bucket bound over every interval: {}; worst: {} grants in {:.3} s, limit {:.1} (skew term rate·{} ms = {:.1})",
        if r.bucket_bound_ok { "held" } else { "EXCEEDED" },
        r.worst_window,
        r.worst_window_s,
        r.window_limit,
        r.skew_ms,
        r.skew_term
    );
    if let Some(total) = r.dynamodb_requests {
        println!(
            "DynamoDB requests {} ({:.4} per admission, {:.2}/s): {:?}",
            total,
            r.dynamodb_requests_per_admission.unwrap_or(0.0),
            r.dynamodb_requests_per_s.unwrap_or(0.0),
            r.dynamodb_requests_by_target
        );
    }
    if let Some(p) = &r.dynamodb_phases {
        for (name, phase) in [
            ("start-up (before the workers begin)", &p.start_up),
            ("first seconds", &p.first),
            ("steady state", &p.steady),
        ] {
            println!(
                "  {name} {:.1} s to {:.1} s: {} requests ({:.2}/s), {} lost conditional writes: {:?}",
                phase.from_s,
                phase.to_s,
                phase.requests,
                phase.requests_per_s,
                phase.conditional_failures,
                phase.by_target
            );
        }
        println!(
            "DynamoDB requests/s for the key in the steady state (from {} s after the workers begin to the last grant): {:.2}, whole run {:.2}",
            request_phases::FIRST_WINDOW.as_secs(),
            p.steady.requests_per_s,
            r.dynamodb_requests_per_s.unwrap_or(0.0)
        );
    }
    if let Some(amount) = r.allowance_amount {
        let counts: Vec<u64> = r.grants_per_period.iter().map(|p| p.grants).collect();
        println!(
            "allowance {amount} per period: grants per period {counts:?} (max {}){}",
            r.max_grants_per_period.unwrap_or(0),
            r.grants_per_period
                .first()
                .map_or(String::new(), |p| format!(", the first from {}", p.start))
        );
    }
    println!(
        "admission latency p50 {:.0} µs, p99 {:.0} µs, max {:.0} µs",
        r.admission_p50_us, r.admission_p99_us, r.admission_max_us
    );
    if let Some(load) = &r.load_average {
        println!("load average: {load}");
    }
}

/// An `--outage` that is not `START:DURATION`.
#[derive(Debug, thiserror::Error)]
#[error("{given:?}: expected START:DURATION in seconds, for example 5:10")]
pub struct OutageArgError {
    given: String,
}

/// `START:DURATION` in seconds.
fn parse_outage(s: &str) -> Result<(f64, f64), OutageArgError> {
    let parse = |v: &str| {
        v.trim()
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && *x >= 0.0)
    };
    match s.split_once(':').map(|(a, b)| (parse(a), parse(b))) {
        Some((Some(a), Some(b))) => Ok((a, b)),
        _ => Err(OutageArgError {
            given: s.to_string(),
        }),
    }
}

/// TOLLGATE_FLEET_SKEW_MS as the fleet reads it, or its default.
fn skew_ms() -> anyhow::Result<u64> {
    match std::env::var("TOLLGATE_FLEET_SKEW_MS") {
        Ok(v) if !v.trim().is_empty() => v.trim().parse().with_context(|| {
            format!("TOLLGATE_FLEET_SKEW_MS={v:?} is not a whole number of milliseconds")
        }),
        _ => Ok(DEFAULT_SKEW_MS),
    }
}

/// Create `dir`, refusing one that already holds a run's logs (appending would mix runs).
fn prepare_log_dir(dir: &Path) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name();
        let name = name.to_string_lossy();
        anyhow::ensure!(
            !(name.starts_with("host-") && name.ends_with(".jsonl")),
            "--log {}: it already holds {name} from an earlier run; give an empty or new directory",
            dir.display()
        );
    }
    Ok(dir.to_path_buf())
}

/// Every logged grant of every host, by instant.
fn read_logs(dir: &Path) -> anyhow::Result<Vec<GrantLine>> {
    let mut out: Vec<GrantLine> = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !(name.starts_with("host-") && name.ends_with(".jsonl")) {
            continue;
        }
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        for (n, line) in text.lines().enumerate() {
            out.push(
                serde_json::from_str(line)
                    .with_context(|| format!("{}:{}: not a grant line", path.display(), n + 1))?,
            );
        }
    }
    out.sort_by_key(|g| g.granted_at_us);
    Ok(out)
}

/// SIGKILLs the workers if they are still running when the limit passes.
struct Deadline(std::sync::mpsc::Sender<()>);

impl Deadline {
    fn arm(pids: Vec<u32>, limit: Duration) -> Deadline {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        std::thread::spawn(move || {
            if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(limit) {
                eprintln!("bench hosts: the workers did not finish within {limit:?}; killing them");
                for pid in pids {
                    if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
                        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                    }
                }
            }
        });
        Deadline(tx)
    }

    fn disarm(self) {
        let _ = self.0.send(());
    }
}
