//! `tollgate bench service --scans N`: the service's soak test. A real `tollgate serve`
//! (spawned with `--listen 127.0.0.1:0`, its own state and admission directories) runs N
//! on-demand scans of a scenario (default: the bundled demo) served by the fixture
//! simulator in this process, submitted over HTTP one after another. The serve process's
//! resident set (`VmRSS` of `/proc/PID/status`) is read after every `--every` scans; the
//! bench fails (exit 1) when the RSS after N exceeds [`GROWTH_LIMIT`] × the RSS after
//! the baseline (`--baseline`, default 50 scans).
//!
//! Why after 50 and not after 1: the first scans warm up the allocator, the connection
//! pools, sled's cache and the history up to its retention (50 reports per target by
//! default); growth after that is what a long-running service must not have.

#![allow(clippy::disallowed_methods)] // benchmarks measure wall-clock time

use std::io::{BufRead, BufReader};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde::Serialize;
use tollgate_service::{ApiToken, ServiceClient};
use tollgate_sim::{bundled, Scenario, Simulator};

use crate::harness::exe;

/// RSS after N may be at most this multiple of the RSS after the baseline.
pub const GROWTH_LIMIT: f64 = 1.2;
/// How often a running scan's status is polled.
const POLL: Duration = Duration::from_millis(25);
/// One scan's limit (its request's timeout is this too).
const SCAN_LIMIT: Duration = Duration::from_secs(120);

/// `bench service` flags.
#[derive(Debug, clap::Args)]
pub struct ServiceArgs {
    /// Scans to run.
    #[arg(long, default_value_t = 500)]
    pub scans: usize,
    /// The scan count whose RSS is the baseline.
    #[arg(long, default_value_t = 50)]
    pub baseline: usize,
    /// Read the RSS after every this many scans.
    #[arg(long, default_value_t = 50)]
    pub every: usize,
    /// Another scenario file instead of the bundled fixtures/scenarios/demo.toml.
    #[arg(long, value_name = "FILE")]
    pub scenario: Option<PathBuf>,
    /// Pass this process's `TOLLGATE_QUOTA_OVERRIDES` on to serve (blanked otherwise),
    /// e.g. to lift the demo's pacing so that scans are quick.
    #[arg(long)]
    pub keep_overrides: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// One RSS reading.
#[derive(Debug, Clone, Serialize)]
struct Sample {
    scans: usize,
    rss_kib: u64,
    /// Median scan duration (submit to finished) of the scans since the last sample.
    median_scan_ms: f64,
}

#[derive(Debug, Serialize)]
struct Report {
    scans: usize,
    scenario: String,
    statuses: std::collections::BTreeMap<String, usize>,
    /// `TOLLGATE_QUOTA_OVERRIDES` as serve had it (`--keep-overrides`).
    overrides: Option<String>,
    samples: Vec<Sample>,
    baseline_scans: usize,
    rss_baseline_kib: u64,
    rss_final_kib: u64,
    ratio: f64,
    limit: f64,
    pass: bool,
}

/// `tollgate serve`, SIGKILLed on drop unless stopped.
struct Serve {
    child: Child,
    addr: String,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Serve {
    fn start(root: &Path, keep_overrides: bool) -> anyhow::Result<Serve> {
        let mut cmd = Command::new(exe::tollgate()?);
        if !keep_overrides {
            cmd.env_remove("TOLLGATE_QUOTA_OVERRIDES");
        }
        let mut child = cmd
            .args(["serve", "--listen", "127.0.0.1:0"])
            .env("TOLLGATE_STATE_DIR", root.join("state"))
            .env("TOLLGATE_ADMISSION_DIR", root.join("admission"))
            // The simulator accepts any credentials: fake ones, never the user's.
            .env("AWS_ACCESS_KEY_ID", "AKIDTOLLGATEBENCH")
            .env("AWS_SECRET_ACCESS_KEY", "tollgate-bench-not-a-secret")
            .env("AWS_REGION", "us-east-1")
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env_remove("AWS_PROFILE")
            .env_remove("AWS_SESSION_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("spawning tollgate serve")?;
        let stdout = child.stdout.take().context("serve's stdout")?;
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .context("reading serve's first line")?;
        let addr = line
            .trim_end()
            .strip_prefix("tollgate serve: listening on http://")
            .with_context(|| format!("unexpected first line from serve: {line:?}"))?
            .to_string();
        Ok(Serve { child, addr })
    }

    /// `VmRSS` in KiB.
    fn rss_kib(&self) -> anyhow::Result<u64> {
        let path = format!("/proc/{}/status", self.child.id());
        let status = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .with_context(|| format!("no VmRSS in {path}"))
    }

    fn stop(mut self) -> anyhow::Result<()> {
        let pid = rustix::process::Pid::from_raw(self.child.id() as i32).context("serve's pid")?;
        rustix::process::kill_process(pid, rustix::process::Signal::TERM)?;
        for _ in 0..300 {
            if self.child.try_wait()?.is_some() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        bail!("serve did not stop within 30 s of SIGTERM")
    }
}

/// Submit one scan and wait until it finishes; its status.
fn one_scan(client: &ServiceClient, body: &str) -> anyhow::Result<String> {
    let answer = client.json("POST", "/v1/scans", Some(body))?;
    let id = answer["scan_id"]
        .as_str()
        .context("no scan_id")?
        .to_string();
    let started = Instant::now();
    loop {
        let scan = client.json("GET", &format!("/v1/scans/{id}"), None)?;
        let status = scan["status"].as_str().unwrap_or("?");
        if !matches!(status, "queued" | "running") {
            return Ok(status.to_string());
        }
        if started.elapsed() > SCAN_LIMIT {
            bail!("scan {id} still {status} after {SCAN_LIMIT:?}");
        }
        std::thread::sleep(POLL);
    }
}

fn median_ms(mut durations: Vec<Duration>) -> f64 {
    durations.sort_unstable();
    durations
        .get(durations.len() / 2)
        .map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

pub fn run(args: &ServiceArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(
        args.every >= 1 && args.baseline >= 1 && args.scans >= args.baseline,
        "--scans must be at least --baseline ({}), and --every at least 1",
        args.baseline
    );
    let (scenario, name) = match &args.scenario {
        Some(path) => (Scenario::load(path)?, path.display().to_string()),
        None => (
            Scenario::parse(bundled::DEMO, "fixtures/scenarios/demo.toml (bundled)")?,
            "fixtures/scenarios/demo.toml".to_string(),
        ),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let regions = scenario.regions.clone();
    let sim = Simulator::new(scenario);
    let server = rt
        .block_on(sim.serve(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))))
        .context("starting the simulator on loopback")?;
    let body = serde_json::json!({
        "regions": regions,
        "endpoint_url": server.endpoint_url(),
        "timeout": format!("{}s", SCAN_LIMIT.as_secs()),
    })
    .to_string();

    let tmp = tempfile::tempdir().context("creating the service's directories")?;
    let serve = Serve::start(tmp.path(), args.keep_overrides)?;
    let token = ApiToken::read(&tmp.path().join("state").join("api-token"))?;
    let client = ServiceClient::new(&format!("http://{}", serve.addr), token)?;

    let mut statuses = std::collections::BTreeMap::new();
    let mut samples = Vec::new();
    let mut durations = Vec::new();
    let mut baseline = None;
    for i in 1..=args.scans {
        let started = Instant::now();
        let status = one_scan(&client, &body)?;
        durations.push(started.elapsed());
        *statuses.entry(status).or_insert(0) += 1;
        if i % args.every == 0 || i == args.baseline || i == args.scans {
            let sample = Sample {
                scans: i,
                rss_kib: serve.rss_kib()?,
                median_scan_ms: median_ms(std::mem::take(&mut durations)),
            };
            if !args.json {
                eprintln!(
                    "bench service: {:>5} scans, VmRSS {:>7} KiB, median scan {:>7.1} ms",
                    sample.scans, sample.rss_kib, sample.median_scan_ms
                );
            }
            if i == args.baseline {
                baseline = Some(sample.rss_kib);
            }
            samples.push(sample);
        }
    }
    serve.stop()?;
    rt.block_on(server.shutdown());

    let rss_baseline_kib = baseline.context("no baseline sample")?;
    let rss_final_kib = samples.last().map_or(0, |s| s.rss_kib);
    let ratio = rss_final_kib as f64 / rss_baseline_kib as f64;
    let report = Report {
        scans: args.scans,
        scenario: name,
        statuses,
        overrides: args
            .keep_overrides
            .then(|| std::env::var("TOLLGATE_QUOTA_OVERRIDES").ok())
            .flatten(),
        samples,
        baseline_scans: args.baseline,
        rss_baseline_kib,
        rss_final_kib,
        ratio,
        limit: GROWTH_LIMIT,
        pass: ratio <= GROWTH_LIMIT,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report);
    }
    Ok(if report.pass {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn print_report(r: &Report) {
    println!(
        "{:>8} {:>12} {:>16}",
        "scans", "VmRSS_KiB", "median_scan_ms"
    );
    for s in &r.samples {
        println!(
            "{:>8} {:>12} {:>16.1}",
            s.scans, s.rss_kib, s.median_scan_ms
        );
    }
    let statuses: Vec<String> = r.statuses.iter().map(|(s, n)| format!("{s} {n}")).collect();
    println!(
        "scenario {}; overrides {}; scan statuses: {}",
        r.scenario,
        r.overrides.as_deref().unwrap_or("none"),
        statuses.join(", ")
    );
    println!(
        "RSS after {} scans / after {}: {:.3} (limit {:.1}): {}",
        r.scans,
        r.baseline_scans,
        r.ratio,
        r.limit,
        if r.pass { "pass" } else { "FAIL" }
    );
}
