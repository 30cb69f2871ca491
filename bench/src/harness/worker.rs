//! `tollgate-bench worker` (hidden): one process of `bench admission --processes` and
//! `bench takeover`.
//!
//! In admission mode it joins the shared admission directory (as coordinator or client,
//! whichever the election makes it), takes one reservation and performs N admissions on
//! one key, timing each; with `--log` it appends one JSON line per grant
//! (`{pid, key, granted_at_us}`, with `host` first under `bench hosts`; the coordinator's wall-clock epoch microseconds) and
//! flushes it at once, so the lines of a process killed mid-run survive. In echo mode it
//! does N round trips of 64-byte frames on a plain Unix socket: the floor. Either way it
//! prints one JSON summary line on stdout for the parent, which reads it back with
//! [`collect_reports`].

#![allow(clippy::disallowed_methods)] // benchmarks measure wall-clock time

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use crate::harness::echo::{EchoClient, EchoStyle};
use anyhow::Context;
use clap::Args;
use serde::{Deserialize, Serialize};
use tollgate_actors::clock::unix_now;
use tollgate_actors::remote::frame;
use tollgate_actors::remote::protocol::{Request, RequestBody, Response};
use tollgate_actors::{connect, CoordinatorSpec, WaitOptions};
use tollgate_quota::{Policy, QuotaKey};
use tollgate_storage::AdmissionDir;

/// The key every worker of one run shares.
pub const BENCH_KEY: &str = "aws/123456789012/us-east-1/bench:Shared";
/// Bytes per echo round trip.
pub const ECHO_FRAME_BYTES: usize = 64;

/// Arguments of `tollgate-bench worker`.
#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// Shared admission directory (admission mode).
    #[arg(long, value_name = "DIR", conflicts_with = "echo")]
    pub dir: Option<PathBuf>,
    /// Echo server socket (floor mode).
    #[arg(long, value_name = "SOCKET")]
    pub echo: Option<PathBuf>,
    /// How the echo client uses its socket (floor mode; the server uses the same).
    #[arg(long, value_enum, default_value_t = EchoStyle::Blocking)]
    pub echo_style: EchoStyle,
    /// Admissions (or round trips) to perform.
    #[arg(long, default_value_t = 1_000)]
    pub requests: usize,
    /// Policy rate per second; 0 for unlimited.
    #[arg(long, default_value_t = 0.0)]
    pub rate: f64,
    /// Policy burst (ignored when unlimited).
    #[arg(long, default_value_t = 1.0)]
    pub burst: f64,
    /// Append one JSON line per grant to this file.
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Start at this wall-clock instant (epoch µs), so workers start together.
    #[arg(long)]
    pub start_at_us: Option<u64>,
    /// The simulated host this worker belongs to (`bench hosts`), written in `--log`.
    #[arg(long)]
    pub host: Option<usize>,
}

/// What a worker reports to the parent.
#[derive(Debug, Serialize, Deserialize)]
pub struct WorkerReport {
    pub pid: u32,
    pub coordinator: bool,
    pub started_us: u64,
    pub finished_us: u64,
    pub latencies_us: Vec<u64>,
    pub granted_at_us: Vec<u64>,
}

/// One line of `--log`.
#[derive(Debug, Serialize, Deserialize)]
pub struct GrantLine {
    /// `bench hosts` only: which host's coordinator granted it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<usize>,
    pub pid: u32,
    pub key: String,
    pub granted_at_us: u64,
}

/// The policy of a run: unlimited when `rate` is 0.
pub fn bench_policy(rate: f64, burst: f64) -> anyhow::Result<Policy> {
    if rate <= 0.0 {
        return Ok(Policy::new(1e9, 1e9, 1_000_000, 0)?);
    }
    Ok(Policy::new(rate, burst, 1_000, 20)?)
}

pub fn run(args: &WorkerArgs) -> anyhow::Result<ExitCode> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let report = match (&args.dir, &args.echo) {
        (Some(dir), None) => admission(args, dir, &rt)?,
        (None, Some(socket)) => rt.block_on(echo(args, socket))?,
        _ => anyhow::bail!(
            "`{}` needs exactly one of --dir and --echo",
            crate::harness::exe::WORKER
        ),
    };
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", serde_json::to_string(&report)?)?;
    Ok(ExitCode::SUCCESS)
}

async fn wait_for_start(start_at_us: Option<u64>) {
    if let Some(at) = start_at_us {
        let now = unix_now().as_micros();
        if at > now {
            tokio::time::sleep(Duration::from_micros(at - now)).await;
        }
    }
}

fn admission(
    args: &WorkerArgs,
    dir: &Path,
    rt: &tokio::runtime::Runtime,
) -> anyhow::Result<WorkerReport> {
    // As in `tollgate`: with TOLLGATE_FLEET_TABLE set, a coordinator this process becomes
    // (after its host's coordinator died) admits under fleet blocks.
    // With TOLLGATE_POLICY_FILE (`bench hosts --policy-file`), such a coordinator also
    // enforces the file's schedules and allowances, and declares them on the fleet item.
    let spec = match std::env::var_os(tollgate_engine::config::POLICY_FILE_ENV) {
        Some(path) if !path.is_empty() => CoordinatorSpec::enforcing(std::sync::Arc::new(
            tollgate_engine::config::policy_file_table(Path::new(&path))?,
        )),
        _ => CoordinatorSpec::none(),
    }
    .with_fleet(tollgate_fleet::spec_from_env()?);
    let dir = AdmissionDir::at(dir)?;
    let joined = connect(&dir, spec)?;
    let coordinator = joined.is_coordinator();
    let handle = joined.handle();
    let key: QuotaKey = BENCH_KEY.parse()?;
    let policy = bench_policy(args.rate, args.burst)?;
    let mut log = match &args.log {
        Some(path) => Some(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("opening {}", path.display()))?,
        ),
        None => None,
    };
    let pid = std::process::id();
    let report = rt.block_on(async {
        // This runtime awaits the admissions: let it read the coordinator's answers
        // itself, as `discover`'s discovery system does (no hop through the client's thread).
        handle.read_answers_here();
        wait_for_start(args.start_at_us).await;
        let started_us = unix_now().as_micros();
        let wait = WaitOptions {
            timeout: Duration::from_secs(600),
            scope: None,
        };
        let slot = handle.reserve(&key, policy, wait).await?;
        let mut latencies_us = Vec::with_capacity(args.requests);
        let mut granted_at_us = Vec::with_capacity(args.requests);
        for _ in 0..args.requests {
            let t = Instant::now();
            let grant = slot.admit(1, false, wait).await?;
            latencies_us.push(t.elapsed().as_micros() as u64);
            granted_at_us.push(grant.admitted_at.as_micros());
            if let Some(log) = log.as_mut() {
                let line = GrantLine {
                    host: args.host,
                    pid,
                    key: BENCH_KEY.to_owned(),
                    granted_at_us: grant.admitted_at.as_micros(),
                };
                writeln!(log, "{}", serde_json::to_string(&line)?)?;
                log.flush()?;
            }
        }
        drop(slot);
        let finished_us = unix_now().as_micros();
        anyhow::Ok(WorkerReport {
            pid,
            coordinator,
            started_us,
            finished_us,
            latencies_us,
            granted_at_us,
        })
    })?;
    rt.block_on(joined.shutdown())?;
    Ok(report)
}

async fn echo(args: &WorkerArgs, socket: &Path) -> anyhow::Result<WorkerReport> {
    let mut client = EchoClient::connect(socket, args.echo_style)
        .with_context(|| format!("connecting to {}", socket.display()))?;
    wait_for_start(args.start_at_us).await;
    let started_us = unix_now().as_micros();
    let mut buf = [7u8; ECHO_FRAME_BYTES];
    let mut latencies_us = Vec::with_capacity(args.requests);
    for _ in 0..args.requests {
        let t = Instant::now();
        client.round_trip(&mut buf).await?;
        latencies_us.push(t.elapsed().as_micros() as u64);
    }
    Ok(WorkerReport {
        pid: std::process::id(),
        coordinator: false,
        started_us,
        finished_us: unix_now().as_micros(),
        latencies_us,
        granted_at_us: Vec::new(),
    })
}

/// `tollgate-bench probe-socket PATH`: say hello as this process and print the answer. Exit 0
/// when welcomed, 2 when refused, 1 when the socket fails.
pub fn probe_socket(socket: &Path) -> anyhow::Result<ExitCode> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let mut stream = tokio::net::UnixStream::connect(socket)
            .await
            .with_context(|| format!("connecting to {}", socket.display()))?;
        let hello = Request {
            id: 0,
            body: RequestBody::Hello {
                pid: std::process::id(),
                generation: unix_now().as_micros(),
                uid: tollgate_storage::current_uid(),
                version: frame::PROTOCOL_VERSION,
            },
        };
        // A refusing coordinator may answer and close before the hello is written.
        let _ = frame::write(&mut stream, &hello).await;
        let answer = tokio::time::timeout(
            Duration::from_secs(5),
            frame::read::<Response, _>(&mut stream),
        )
        .await
        .context("no answer within 5 s")?;
        match answer {
            Ok(resp) => {
                println!("{}", serde_json::to_string(&resp)?);
                Ok(match resp.body {
                    tollgate_actors::remote::protocol::ResponseBody::Welcome { .. } => {
                        ExitCode::SUCCESS
                    }
                    _ => ExitCode::from(2),
                })
            }
            Err(e) => {
                println!("{{\"closed\":\"{e}\"}}");
                Ok(ExitCode::from(2))
            }
        }
    })
}

/// How one worker process ended.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "ended", rename_all = "kebab-case")]
pub enum WorkerEnd {
    /// It exited 0 and printed its report.
    Reported { pid: u32 },
    /// A signal ended it (SIGKILL from outside, or a crash): it printed no report.
    Killed { pid: u32, signal: i32 },
    /// It exited non-zero, or its report could not be read.
    Failed { pid: u32, why: String },
}

/// Every worker of one spawn, waited for to the last: the survivors' reports and how
/// each process ended, in spawn order.
#[derive(Debug, Default)]
pub struct Collected {
    pub reports: Vec<WorkerReport>,
    pub ends: Vec<WorkerEnd>,
}

impl Collected {
    /// The workers that did not report (killed or failed).
    pub fn lost(&self) -> impl Iterator<Item = &WorkerEnd> {
        self.ends
            .iter()
            .filter(|e| !matches!(e, WorkerEnd::Reported { .. }))
    }

    /// The reports, or an error naming every worker that did not report.
    pub fn all_reported(self) -> anyhow::Result<Vec<WorkerReport>> {
        let lost: Vec<String> = self.lost().map(describe).collect();
        anyhow::ensure!(
            lost.is_empty(),
            "{} bench worker(s) did not report: {}",
            lost.len(),
            lost.join("; ")
        );
        Ok(self.reports)
    }
}

/// One line for a worker that did not report.
pub fn describe(end: &WorkerEnd) -> String {
    match end {
        WorkerEnd::Reported { pid } => format!("worker {pid} reported"),
        WorkerEnd::Killed { pid, signal } => format!("worker {pid} was killed by signal {signal}"),
        WorkerEnd::Failed { pid, why } => format!("worker {pid} failed: {why}"),
    }
}

/// Worker processes that are killed and reaped if they are dropped before being
/// collected (an error while spawning the rest, or a panic): no bench leaves one behind.
#[derive(Debug, Default)]
pub struct Workers(Vec<std::process::Child>);

impl Workers {
    pub fn push(&mut self, child: std::process::Child) {
        self.0.push(child);
    }

    /// Wait for every worker, whatever the others did: one that was killed does not
    /// stop the wait for the survivors (they are reported), and none is left running.
    pub fn collect(mut self) -> Collected {
        use std::os::unix::process::ExitStatusExt;
        let mut out = Collected::default();
        for child in std::mem::take(&mut self.0) {
            let pid = child.id();
            let end = match child.wait_with_output() {
                Err(e) => WorkerEnd::Failed {
                    pid,
                    why: format!("waiting for it: {e}"),
                },
                Ok(o) if o.status.signal().is_some() => WorkerEnd::Killed {
                    pid,
                    signal: o.status.signal().unwrap_or_default(),
                },
                Ok(o) if !o.status.success() => WorkerEnd::Failed {
                    pid,
                    why: o.status.to_string(),
                },
                Ok(o) => {
                    let line = String::from_utf8_lossy(&o.stdout);
                    match serde_json::from_str::<WorkerReport>(line.trim()) {
                        Ok(r) => {
                            out.reports.push(r);
                            WorkerEnd::Reported { pid }
                        }
                        Err(e) => WorkerEnd::Failed {
                            pid,
                            why: format!("its report is unreadable: {e}"),
                        },
                    }
                }
            };
            out.ends.push(end);
        }
        out
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Wait for workers spawned with piped stdout: every one of them, then their reports in
/// order, or an error naming each that did not report.
pub fn collect_reports(children: Vec<std::process::Child>) -> anyhow::Result<Vec<WorkerReport>> {
    Workers(children).collect().all_reported()
}

/// From the first worker's start to the last one's finish.
pub fn span_s(reports: &[WorkerReport]) -> f64 {
    let start = reports.iter().map(|r| r.started_us).min().unwrap_or(0);
    let end = reports.iter().map(|r| r.finished_us).max().unwrap_or(0);
    end.saturating_sub(start) as f64 / 1e6
}
