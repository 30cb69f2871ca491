//! `tollgate bench org`: one organization scan (`tollgate discover --organization
//! --regions all`, a real process) of a generated organization (`scenario`: `--accounts`
//! accounts × `--regions` regions, a small inventory per account-region) through the
//! fixture simulator in this process on a loopback port, with the coordinator a process
//! of its own (the hidden `org-coordinator`), so that each one's cost is measured apart.
//!
//! Per run: completion against the ideal the server quotas allow (`ideal`), calls per
//! account, AssumeRole and ListAccounts counts (the simulator's counters), CPU time per
//! AWS call of the scanner and of the coordinator (`/proc/<pid>/stat`), each one's peak
//! RSS (`VmRSS`, sampled every 100 ms while the scan runs) and the coordinator's live
//! quota actors when the scan ends. `--runs N` prints min / median / max over runs.
//!
//! The floor (`cpu/call sdk`): after each run, the plain AWS SDK makes the same
//! discovery calls for the management account (`--floor-repeat` times over its regions)
//! against the same simulator, and its CPU per attempt is printed beside the scanner's:
//! no gate can make a call cheaper than the SDK that sends it (see [`floor`]).
//!
//! tollgate runs with its quota overrides set one token under the scenario's server
//! quotas for every operation the scenario gives one (`overrides`: the hub's
//! `sts:AssumeRole` and `organizations:ListAccounts` here), as `bench metrics` sets its
//! budgets to the server's: the bench
//! measures how close tollgate comes to the quotas it is told, and a default policy
//! above the server's (AssumeRole's 600/s against the hub's 10/s) would only measure
//! the server's throttling and the retries it causes.
//!
//! A run that crashed, wrote no report, or did not send exactly one AssumeRole request
//! per member (as the server counts them, retries included) fails the bench (exit 1)
//! after the table; so does a floor that was throttled or is not below the scanner's
//! figure.
//!
//! # Layout
//! - `scenario`: the generated organization.
//! - `ideal`: the binding server-quota constraint.
//! - `proc_sample`: RSS and CPU time from `/proc`.
//! - `coordinator`: the hidden coordinator process.

#![allow(clippy::disallowed_methods)] // benchmarks measure wall-clock time

pub mod coordinator;
mod ideal;
pub(crate) mod proc_sample;
mod scenario;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use serde::Serialize;
use tollgate_sim::Simulator;

use crate::org::scenario::Shape;

/// Longest the scan may run.
const TIMEOUT: &str = "30m";
/// How often RSS is sampled.
const SAMPLE_EVERY: Duration = Duration::from_millis(100);

/// Arguments of `tollgate bench org`.
#[derive(Debug, Args)]
pub struct OrgArgs {
    /// Accounts in the organization, the management account included.
    #[arg(long, default_value_t = 50)]
    pub accounts: usize,
    /// Regions enabled in every account (1 to 17).
    #[arg(long, default_value_t = 17, value_parser = clap::value_parser!(u16).range(1..=17))]
    pub regions: u16,
    /// Lambda functions, DynamoDB tables and KMS keys per account-region, each (plus one
    /// S3 bucket per account).
    #[arg(long, default_value_t = 1)]
    pub items_per_region: usize,
    /// EC2 instances, snapshots and images per account-region, each (in a VPC with a
    /// subnet and a security group; each instance with its root volume and interface).
    /// 0, the default, generates no EC2: the default figures stay comparable with earlier
    /// runs (the scan collects the four first datasets alone, without `--breadth`).
    #[arg(long, default_value_t = 0)]
    pub ec2_per_region: usize,
    /// The whole estate: the scan collects every native type (EC2's included) and sweeps
    /// five Cloud Control types (`scenario::SWEPT`: IAM roles, SQS queues, Kinesis streams,
    /// SNS topics, ECR repositories) with the tagging sweep, in every account; the members'
    /// underlying list operations (`iam:ListRoles`, ...) have server quotas far below
    /// Cloud Control's own, and the ideal counts them. Sets `--ec2-per-region` and
    /// `--cloudcontrol-per-region` to 5 and 60 unless given.
    #[arg(long)]
    pub breadth: bool,
    /// Resources of each swept Cloud Control type per account-region (IAM roles: per
    /// account); 0 declares no Cloud Control types.
    #[arg(long)]
    pub cloudcontrol_per_region: Option<usize>,
    /// `tollgate discover --max-accounts-in-flight` (tollgate's default, 8, when unset).
    #[arg(long)]
    pub max_accounts_in_flight: Option<usize>,
    /// Runs (each on a fresh simulator and admission directory); min / median / max.
    #[arg(long, default_value_t = 1)]
    pub runs: usize,
    /// Keep each run's scenario, report, telemetry and logs in DIR.
    #[arg(long, value_name = "DIR")]
    pub keep: Option<std::path::PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// The floor's size: after each run, the plain AWS SDK (no gate, no coordinator, a
    /// current-thread runtime) discovers the management account's regions this many
    /// times over, against the same simulator, for the `cpu/call sdk` column.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub floor_repeat: u32,
}

/// One run's figures.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunResult {
    pub completion_s: f64,
    pub ideal_s: f64,
    pub completion_vs_ideal: f64,
    pub binding: String,
    pub calls: u64,
    pub throttled: u64,
    pub calls_per_account: f64,
    pub assume_role: u64,
    pub list_accounts: u64,
    pub scanner_cpu_us_per_call: f64,
    pub coordinator_cpu_us_per_call: f64,
    /// The floor: the plain SDK's CPU per attempt over the same operations.
    pub sdk_cpu_us_per_call: f64,
    pub sdk_calls: u64,
    /// The floor's attempts the simulator throttled (0 expected: the floor measures
    /// calls answered, not retries).
    pub sdk_throttled: u64,
    pub scanner_peak_rss_mb: f64,
    pub coordinator_peak_rss_mb: f64,
    /// The scanner's CPU per call over the floor's (issue 35: at most 1.3).
    pub scanner_vs_floor: f64,
    /// The coordinator's CPU per call over the floor's (issue 35: at most 0.5).
    pub coordinator_vs_floor: f64,
    /// Quota actors live when the scan ended (idle ones retire after 5 s).
    pub live_actors: usize,
    /// The most quota actors live at once during the run.
    pub peak_actors: usize,
    /// Quota actors started during the run: one per key, plus one each time a key is
    /// used again after its actor retired.
    pub started_actors: u64,
    pub accounts_scanned: u64,
    pub exit_code: Option<i32>,
    pub failure: Option<String>,
}

#[derive(Debug, Serialize)]
struct Report {
    accounts: usize,
    regions: u16,
    items_per_region: usize,
    ec2_per_region: usize,
    breadth: bool,
    cloudcontrol_per_region: usize,
    max_accounts_in_flight: Option<usize>,
    runs: Vec<RunResult>,
}

/// What one run scans and how.
#[derive(Debug, Clone, Copy)]
struct Setup {
    shape: Shape,
    breadth: bool,
    max_accounts_in_flight: Option<usize>,
    floor_repeat: u32,
}

/// Run the organization benchmark.
pub fn run(args: &OrgArgs) -> anyhow::Result<ExitCode> {
    let (ec2, swept) = match args.breadth {
        true => (
            if args.ec2_per_region == 0 {
                5
            } else {
                args.ec2_per_region
            },
            args.cloudcontrol_per_region.unwrap_or(60),
        ),
        false => (
            args.ec2_per_region,
            args.cloudcontrol_per_region.unwrap_or(0),
        ),
    };
    let shape = Shape {
        accounts: args.accounts.max(1),
        regions: usize::from(args.regions),
        items_per_region: args.items_per_region,
        ec2_per_region: ec2,
        cloudcontrol_per_region: swept,
    };
    let setup = Setup {
        shape,
        breadth: args.breadth,
        max_accounts_in_flight: args.max_accounts_in_flight,
        floor_repeat: args.floor_repeat,
    };
    let tmp = tempfile::tempdir().context("creating a temporary directory")?;
    let root = match &args.keep {
        Some(dir) => dir.clone(),
        None => tmp.path().to_path_buf(),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("starting the simulator's runtime")?;
    let mut runs = Vec::new();
    for i in 0..args.runs.max(1) {
        let dir = root.join(format!("run-{i}"));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        eprintln!(
            "bench org: run {} of {}: {} accounts × {} regions ...",
            i + 1,
            args.runs.max(1),
            shape.accounts,
            shape.regions
        );
        runs.push(run_once(&rt, setup, &dir)?);
    }
    let report = Report {
        accounts: shape.accounts,
        regions: args.regions,
        items_per_region: args.items_per_region,
        ec2_per_region: shape.ec2_per_region,
        breadth: args.breadth,
        cloudcontrol_per_region: shape.cloudcontrol_per_region,
        max_accounts_in_flight: args.max_accounts_in_flight,
        runs,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_table(&report);
    }
    let failed: Vec<_> = report
        .runs
        .iter()
        .filter_map(|r| r.failure.clone())
        .collect();
    for f in &failed {
        eprintln!("bench org: FAILED: {f}");
    }
    Ok(if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The coordinator's `tollgate_actors::Footprint`, as it prints it.
#[derive(Debug, Clone, Copy, serde::Deserialize)]
struct Footprint {
    live_actors: usize,
    peak_live_actors: usize,
    started_actors: u64,
}

/// The coordinator process: its pid, its stdin (closed to stop it) and its answers.
struct Coordinator {
    child: std::process::Child,
    answers: BufReader<std::process::ChildStdout>,
}

impl Coordinator {
    fn start(admission: &Path, log: &Path) -> anyhow::Result<Coordinator> {
        let mut child = Command::new(crate::harness::exe::bench()?)
            .arg(coordinator::ORG_COORDINATOR)
            .arg("--dir")
            .arg(admission)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(log)?)
            .spawn()
            .context("spawning the org coordinator")?;
        let mut answers = BufReader::new(child.stdout.take().context("coordinator stdout")?);
        let mut line = String::new();
        answers.read_line(&mut line)?;
        anyhow::ensure!(
            line.trim() == "ready",
            "the org coordinator did not start (said {line:?}; see {})",
            log.display()
        );
        Ok(Coordinator { child, answers })
    }

    fn footprint(&mut self) -> anyhow::Result<Footprint> {
        let stdin = self.child.stdin.as_mut().context("coordinator stdin")?;
        writeln!(stdin, "footprint")?;
        stdin.flush()?;
        let mut line = String::new();
        self.answers.read_line(&mut line)?;
        serde_json::from_str(&line).with_context(|| format!("the footprint answer {line:?}"))
    }

    fn stop(mut self) -> anyhow::Result<()> {
        drop(self.child.stdin.take());
        let status = self.child.wait()?;
        anyhow::ensure!(status.success(), "the org coordinator exited with {status}");
        Ok(())
    }
}

impl Drop for Coordinator {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// One run: set-up (a fresh simulator on loopback, the coordinator process), one scan
/// sampled until it exits, the floor against the same simulator, then the figures.
fn run_once(rt: &tokio::runtime::Runtime, setup: Setup, dir: &Path) -> anyhow::Result<RunResult> {
    let (shape, floor_repeat) = (setup.shape, setup.floor_repeat);
    let scenario = scenario::scenario(shape)?;
    std::fs::write(dir.join("scenario.toml"), scenario::toml(shape))?;
    let simulator = Simulator::new(scenario.clone());
    let server = rt
        .block_on(simulator.serve(([127, 0, 0, 1], 0).into()))
        .context("starting the simulator on loopback")?;
    let url = format!("http://{}", server.local_addr());
    let admission = dir.join("admission");
    std::fs::create_dir_all(&admission)?;
    let mut coordinator = Coordinator::start(&admission, &dir.join("coordinator.log"))?;
    let coordinator_pid = coordinator.child.id();
    let coordinator_before = proc_sample::read(coordinator_pid).unwrap_or_default();

    simulator.reset();
    let report_path = dir.join("report.json");
    let started = Instant::now();
    let mut child = discover_command(&url, &scenario, &admission, &report_path, dir, setup)?
        .spawn()
        .context("spawning tollgate discover --organization")?;
    let peaks = Peaks::sample_until_exit(child.id(), coordinator_pid);
    let status = child.wait().context("waiting for tollgate discover")?;
    let completion = started.elapsed();
    let coordinator_after = proc_sample::read(coordinator_pid).unwrap_or_default();
    let footprint = coordinator.footprint()?;
    coordinator.stop()?;
    let stats = simulator.stats();
    simulator.reset();
    let floor = floor(&url, &scenario, floor_repeat, dir);
    let floor_throttled = simulator.stats().totals.throttled;
    rt.block_on(server.shutdown());
    let floor = floor?;

    let op = |name: &str| stats.per_operation.get(name).map_or(0, |s| s.received);
    let calls = stats.totals.received;
    let members = scenario
        .organization
        .as_ref()
        .map_or(0, |o| o.members.len()) as u64;
    let report: Option<serde_json::Value> = std::fs::read_to_string(&report_path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    let scanned = report
        .as_ref()
        .and_then(|r| r.get("accounts"))
        .and_then(|a| a.as_array())
        .map_or(0, |a| a.len() as u64);
    let per_call = |cpu: Duration| cpu.as_secs_f64() * 1e6 / calls.max(1) as f64;
    let scanner_cpu = per_call(peaks.scanner_last.cpu);
    let coordinator_cpu = per_call(coordinator_after.cpu.saturating_sub(coordinator_before.cpu));
    let sdk_cpu = floor.cpu_s * 1e6 / floor.attempts.max(1) as f64;
    let binding = ideal::binding(&scenario, setup.breadth);
    let completion_s = completion.as_secs_f64();
    let mut result = RunResult {
        completion_s,
        ideal_s: binding.seconds,
        completion_vs_ideal: if binding.seconds > 0.0 {
            completion_s / binding.seconds
        } else {
            f64::NAN
        },
        binding: binding.what,
        calls,
        throttled: stats.totals.throttled,
        calls_per_account: calls as f64 / shape.accounts as f64,
        assume_role: op("sts:AssumeRole"),
        list_accounts: op("organizations:ListAccounts"),
        scanner_cpu_us_per_call: scanner_cpu,
        coordinator_cpu_us_per_call: coordinator_cpu,
        sdk_cpu_us_per_call: sdk_cpu,
        scanner_vs_floor: scanner_cpu / sdk_cpu,
        coordinator_vs_floor: coordinator_cpu / sdk_cpu,
        sdk_calls: floor.attempts,
        sdk_throttled: floor_throttled,
        scanner_peak_rss_mb: peaks.scanner_kb as f64 / 1024.0,
        coordinator_peak_rss_mb: peaks.coordinator_kb as f64 / 1024.0,
        live_actors: footprint.live_actors,
        peak_actors: footprint.peak_live_actors,
        started_actors: footprint.started_actors,
        accounts_scanned: scanned,
        exit_code: status.code(),
        failure: None,
    };
    result.failure = failure(&result, status, report.is_some(), members, shape);
    Ok(result)
}

/// Why a run fails, if it does: the scan crashed or wrote no report, the floor measured
/// retries or is no floor, or the AssumeRole count or the accounts scanned are off.
fn failure(
    run: &RunResult,
    status: std::process::ExitStatus,
    reported: bool,
    members: u64,
    shape: Shape,
) -> Option<String> {
    let (sdk, scanner) = (run.sdk_cpu_us_per_call, run.scanner_cpu_us_per_call);
    let (floor_throttled, assume_role) = (run.sdk_throttled, run.assume_role);
    let scanned = run.accounts_scanned;
    match (status.code(), reported) {
        (None, _) => Some(format!("tollgate discover crashed: {status}")),
        (_, false) => Some("tollgate discover wrote no report".to_owned()),
        // A floor at or above what it bounds, or one that measured retries, is no floor.
        _ if floor_throttled > 0 => Some(format!(
            "the plain-SDK floor was throttled {floor_throttled} times: its CPU per attempt includes retries"
        )),
        _ if sdk >= scanner => Some(format!(
            "the plain-SDK floor ({sdk:.0} µs per call) is not below the scanner ({scanner:.0} µs): no floor"
        )),
        _ if assume_role != members => Some(format!(
            "{assume_role} AssumeRole calls for {members} members"
        )),
        _ if scanned != shape.accounts as u64 => {
            Some(format!("{scanned} accounts scanned of {}", shape.accounts))
        }
        _ => None,
    }
}

/// The scan: `tollgate discover --organization --regions all` against the simulator,
/// sharing the coordinator's admission directory, its overrides under the server quotas.
fn discover_command(
    url: &str,
    scenario: &tollgate_sim::Scenario,
    admission: &Path,
    report_path: &Path,
    dir: &Path,
    setup: Setup,
) -> anyhow::Result<Command> {
    let mut cmd = Command::new(crate::harness::exe::tollgate()?);
    cmd.args(["discover", "--organization", "--regions", "all"]);
    if setup.breadth {
        // Every native type, the swept ones, and the tagging sweep: the whole estate.
        let mut types = vec!["native".to_string()];
        types.extend(scenario::SWEPT.iter().map(|(t, _, _)| t.to_string()));
        cmd.args(["--types", &types.join(",")]);
    } else {
        // The four first datasets, without the tagging sweep: the bench keeps their
        // inventory so its figures stay comparable with those before EC2 and the sweep
        // (and with the plain-SDK floor).
        cmd.args([
            "--no-tags",
            "--types",
            "s3-buckets,lambda-functions,dynamodb-tables,kms-keys",
        ]);
    }
    if let Some(n) = setup.max_accounts_in_flight {
        cmd.args(["--max-accounts-in-flight", &n.to_string()]);
    }
    cmd.args(["--endpoint-url", url, "--timeout", TIMEOUT, "--output"])
        .arg(report_path)
        .env("TOLLGATE_ADMISSION_DIR", admission)
        .env("TOLLGATE_QUOTA_OVERRIDES", overrides(scenario))
        .env("AWS_ACCESS_KEY_ID", "AKIDSIMULATOR")
        .env("AWS_SECRET_ACCESS_KEY", "simulator-secret")
        .env("AWS_REGION", scenario.regions[0].as_str())
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env_remove("AWS_PROFILE")
        .env_remove("AWS_SESSION_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("discover.log"))?);
    Ok(cmd)
}

/// Peak RSS of the scanner and the coordinator while the scan ran, and the scanner's
/// last reading (its CPU time when it exited).
struct Peaks {
    scanner_kb: u64,
    coordinator_kb: u64,
    scanner_last: proc_sample::Reading,
}

impl Peaks {
    /// Sample both every `SAMPLE_EVERY` until the scanner is a zombie or gone.
    fn sample_until_exit(scanner: u32, coordinator: u32) -> Peaks {
        let mut peaks = Peaks {
            scanner_kb: 0,
            coordinator_kb: 0,
            scanner_last: proc_sample::Reading::default(),
        };
        loop {
            if let Some(r) = proc_sample::read(coordinator) {
                peaks.coordinator_kb = peaks.coordinator_kb.max(r.rss_kb);
            }
            match proc_sample::read(scanner) {
                Some(r) => {
                    peaks.scanner_kb = peaks.scanner_kb.max(r.rss_kb);
                    peaks.scanner_last = r;
                    if r.zombie {
                        return peaks;
                    }
                }
                None => return peaks,
            }
            std::thread::sleep(SAMPLE_EVERY);
        }
    }
}

/// The floor of `cpu/call scan`: the plain AWS SDK for Rust making the same discovery
/// calls (S3, Lambda, DynamoDB, KMS; `bench fleet`'s plain-SDK worker) for the
/// management account in every region of the scenario, `repeat` times over, on a
/// current-thread runtime, with no gate and no coordinator: its CPU per attempt, set-up
/// excluded. What the scanner spends above it is tollgate's (the gate, the
/// coordinator's client side, the organization and report), plus the calls the floor
/// does not make (ListAccounts, AssumeRole, ListRegions: 2 % of the calls at 50 × 17).
fn floor(
    url: &str,
    scenario: &tollgate_sim::Scenario,
    repeat: u32,
    dir: &Path,
) -> anyhow::Result<crate::fleet::sdk::FleetWorkerReport> {
    let out = Command::new(crate::harness::exe::bench()?)
        .arg(crate::harness::exe::FLEET_WORKER)
        .args([
            "--mode",
            "sdk-standard",
            "--current-thread",
            "--endpoint-url",
            url,
        ])
        .arg("--regions")
        .arg(scenario.regions.join(","))
        .arg("--repeat")
        .arg(repeat.to_string())
        .env("AWS_ACCESS_KEY_ID", "AKIDSIMULATOR")
        .env("AWS_SECRET_ACCESS_KEY", "simulator-secret")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env_remove("AWS_PROFILE")
        .env_remove("AWS_SESSION_TOKEN")
        .stdin(Stdio::null())
        .stderr(std::fs::File::create(dir.join("floor.log"))?)
        .output()
        .context("spawning the plain-SDK floor worker")?;
    anyhow::ensure!(
        out.status.success(),
        "the plain-SDK floor worker failed ({}; see {})",
        out.status,
        dir.join("floor.log").display()
    );
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.trim()).with_context(|| format!("the floor worker's report {text:?}"))
}

/// tollgate's overrides: every operation the scenario (the management account or a
/// member) gives a server quota of its own, one token under that quota: the burst one
/// less (at least 1), or with a burst of 1 the rate 10 % lower.
///
/// Why under: tollgate's bucket and the server's refill at the same rate but see each
/// request at different instants (admission, then the send and the loopback), so at the
/// exact figures a request admitted with one token left can arrive when the server's
/// bucket holds a little less. Measured at 50 × 17 in bench-fast, the exact figures let
/// the server throttle 0-2 requests a run (50 AssumeRoles for 49 members, 4 ListAccounts
/// requests for 3 pages); a token of slack covers that jitter up to one refill interval
/// (100 ms at 10/s). A burst above what a policy allows (`max(1, rate)`) is capped there.
fn overrides(scenario: &tollgate_sim::Scenario) -> String {
    let members = scenario.organization.iter().flat_map(|o| &o.members);
    let accounts = std::iter::once(scenario).chain(members.map(|m| &m.scenario));
    // By tollgate's key (`service:group`): operations that share a group (ECS's
    // `ListClusters` and `DescribeClusters`: `ecs:cluster-resource-read`) share one
    // budget, told the smallest of their server quotas.
    let mut quotas: std::collections::BTreeMap<String, (f64, u32)> = Default::default();
    for account in accounts {
        for (operation, (_, quota)) in &account.quotas.operations {
            let key = match operation.split_once(':') {
                Some((service, name)) => {
                    format!(
                        "{service}:{}",
                        tollgate_quota::operation_group(service, name)
                    )
                }
                None => operation.clone(),
            };
            let told = quotas
                .entry(key)
                .or_insert((quota.rate_per_second, quota.burst));
            *told = (told.0.min(quota.rate_per_second), told.1.min(quota.burst));
        }
    }
    let entries: serde_json::Map<String, serde_json::Value> = quotas
        .into_iter()
        .map(|(key, (rate, burst))| (key, under(rate, burst)))
        .collect();
    serde_json::Value::Object(entries).to_string()
}

/// One token under a server quota of `rate` per second and `burst`, as an override
/// entry (see [`overrides`]).
fn under(rate: f64, burst: u32) -> serde_json::Value {
    let cap = rate.max(1.0).floor() as u32;
    let burst = burst.clamp(1, cap);
    let (rate, burst) = if burst >= 2 {
        (rate, burst - 1)
    } else {
        (rate * 0.9, 1)
    };
    serde_json::json!({"ratePerSecond": rate, "burst": burst})
}

/// The table's columns, in order (the bench test checks them).
pub const COLUMNS: &[&str] = &[
    "completion",
    "ideal",
    "×ideal",
    "calls/acct",
    "AssumeRole",
    "ListAccts",
    "throttled",
    "cpu/call scan",
    "cpu/call coord",
    "cpu/call sdk",
    "scan/floor",
    "coord/floor",
    "rss scan",
    "rss coord",
    "peak actors",
    "started",
];

fn cells(r: &RunResult) -> Vec<String> {
    vec![
        format!("{:.2}s", r.completion_s),
        format!("{:.2}s", r.ideal_s),
        format!("{:.2}", r.completion_vs_ideal),
        format!("{:.1}", r.calls_per_account),
        r.assume_role.to_string(),
        r.list_accounts.to_string(),
        r.throttled.to_string(),
        format!("{:.0}µs", r.scanner_cpu_us_per_call),
        format!("{:.0}µs", r.coordinator_cpu_us_per_call),
        format!("{:.0}µs", r.sdk_cpu_us_per_call),
        format!("{:.2}", r.scanner_vs_floor),
        format!("{:.2}", r.coordinator_vs_floor),
        format!("{:.1}MB", r.scanner_peak_rss_mb),
        format!("{:.1}MB", r.coordinator_peak_rss_mb),
        r.peak_actors.to_string(),
        r.started_actors.to_string(),
    ]
}

fn row(label: &str, cells: &[String]) {
    let mut line = format!("{label:<7}");
    for (c, name) in cells.iter().zip(COLUMNS) {
        let width = name.chars().count().max(8);
        line.push_str(&format!(" {c:>width$}"));
    }
    println!("{line}");
}

/// The run at rank `q` (0 min, 1 median, 2 max) of each column, taken column by column.
fn summary(runs: &[RunResult], pick: fn(&mut Vec<f64>) -> f64) -> RunResult {
    let col = |f: fn(&RunResult) -> f64| {
        let mut v: Vec<f64> = runs.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        pick(&mut v)
    };
    RunResult {
        completion_s: col(|r| r.completion_s),
        ideal_s: col(|r| r.ideal_s),
        completion_vs_ideal: col(|r| r.completion_vs_ideal),
        calls_per_account: col(|r| r.calls_per_account),
        assume_role: col(|r| r.assume_role as f64) as u64,
        list_accounts: col(|r| r.list_accounts as f64) as u64,
        throttled: col(|r| r.throttled as f64) as u64,
        scanner_cpu_us_per_call: col(|r| r.scanner_cpu_us_per_call),
        coordinator_cpu_us_per_call: col(|r| r.coordinator_cpu_us_per_call),
        sdk_cpu_us_per_call: col(|r| r.sdk_cpu_us_per_call),
        scanner_peak_rss_mb: col(|r| r.scanner_peak_rss_mb),
        coordinator_peak_rss_mb: col(|r| r.coordinator_peak_rss_mb),
        scanner_vs_floor: col(|r| r.scanner_vs_floor),
        coordinator_vs_floor: col(|r| r.coordinator_vs_floor),
        live_actors: col(|r| r.live_actors as f64) as usize,
        peak_actors: col(|r| r.peak_actors as f64) as usize,
        started_actors: col(|r| r.started_actors as f64) as u64,
        ..RunResult::default()
    }
}

fn print_table(report: &Report) {
    println!(
        "organization benchmark: {} accounts × {} regions, {} functions/tables/keys per \
         account-region; scanner `tollgate discover --organization --regions all`, \
         coordinator a process of its own",
        report.accounts, report.regions, report.items_per_region
    );
    if report.ec2_per_region > 0 {
        println!(
            "EC2: {} instances, snapshots and images per account-region, in a VPC",
            report.ec2_per_region
        );
    }
    if let Some(r) = report.runs.first() {
        println!("ideal bound by: {}", r.binding);
    }
    row(
        "run",
        &COLUMNS.iter().map(|c| c.to_string()).collect::<Vec<_>>(),
    );
    for (i, r) in report.runs.iter().enumerate() {
        row(&format!("{}", i + 1), &cells(r));
    }
    if report.runs.len() > 1 {
        row("min", &cells(&summary(&report.runs, |v| v[0])));
        row("median", &cells(&summary(&report.runs, |v| v[v.len() / 2])));
        row("max", &cells(&summary(&report.runs, |v| v[v.len() - 1])));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tollgate_quota::PolicyTable;

    #[test]
    fn tollgate_is_told_one_token_under_the_hub_quotas_the_server_enforces() {
        let s = scenario::scenario(Shape {
            accounts: 3,
            regions: 1,
            items_per_region: 1,
            ec2_per_region: 0,
            cloudcontrol_per_region: 0,
        })
        .unwrap();
        let table = PolicyTable::with_overrides(&overrides(&s), "bench org").unwrap();
        for (service, group, operation) in [
            ("sts", "AssumeRole", "sts:AssumeRole"),
            (
                "organizations",
                "ListAccounts",
                "organizations:ListAccounts",
            ),
        ] {
            let policy = table.policy_for(service, group);
            let (rate, burst) = s.server_quota(operation);
            let told = (policy.rate_per_second(), policy.burst());
            // AssumeRole 10/s burst 5 → burst 4; ListAccounts 2/s burst 1 → 1.8/s.
            let expected = match burst {
                1 => (rate * 0.9, 1.0),
                b => (rate, f64::from(b - 1)),
            };
            assert_eq!(told, expected, "{operation}");
            assert!(told.0 <= rate && told.1 <= f64::from(burst), "{operation}");
        }
    }

    #[test]
    fn breadth_tells_tollgate_the_underlying_quotas_under_its_own_keys() {
        let s = scenario::scenario(Shape {
            accounts: 2,
            regions: 1,
            items_per_region: 1,
            ec2_per_region: 0,
            cloudcontrol_per_region: 30,
        })
        .unwrap();
        let table = PolicyTable::with_overrides(&overrides(&s), "bench org").unwrap();
        // ECR's DescribeRepositories (2/s burst 2 at the server), IAM's and SQS's keys
        // are their operations'. One token under each: the rate, a burst one smaller
        // (at most the rate).
        for (service, operation, rate, burst) in [
            ("ecr", "DescribeRepositories", 2.0, 1.0),
            ("iam", "ListRoles", 2.0, 1.0),
            ("sqs", "ListQueues", 2.0, 1.0),
        ] {
            let group = tollgate_quota::operation_group(service, operation);
            let policy = table.policy_for(service, &group);
            assert_eq!(
                (policy.rate_per_second(), policy.burst()),
                (rate, burst),
                "{service}:{group}"
            );
        }
    }
}
