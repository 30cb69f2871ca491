//! `tollgate bench admission --processes P`: P real processes share one admission
//! directory and one key, each performing N admissions; the parent reports what they saw.
//!
//! The floor is measured in the same run: the same P processes' worth of clients doing
//! 64-byte round trips against a bare Unix-socket echo server in this process (`harness::echo`:
//! blocking, or registered read-only as tollgate's socket code is). A floor above
//! tollgate's p50 or p99 is no floor: the run then fails (exit 1), as it does when a
//! window held more grants than the policy allows. The
//! two alternate in `--rounds` rounds (each with its share of the requests) and each
//! side's figures are pooled over its rounds, so that the drift of a shared machine (its
//! neighbours come and go within seconds) weighs on both sides alike. The admission
//! figures include the coordinator election (one of the workers becomes coordinator, the
//! others are its clients, unless `--serve` starts a dedicated one) and, with a finite
//! `--rate`, the pacing: then `ideal_s` is what the policy allows at best, and
//! `max_starts_in_any_window` is checked against `window_limit` from the grant instants
//! themselves.

#![allow(clippy::disallowed_methods)] // benchmarks measure wall-clock time

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

use anyhow::Context;
use serde::Serialize;
use tollgate_actors::clock::unix_now;
use tollgate_quota::window::WindowShape;
use tollgate_quota::Policy;

use crate::admission::{Coordinator, Peer, Processes};
use crate::harness::coordinator::DedicatedCoordinator;
use crate::harness::echo::{EchoServer, EchoStyle};
use crate::harness::stats::{print_table, Row};
use crate::harness::window::max_in_window;
use crate::harness::worker::{
    bench_policy, describe, span_s, Collected, WorkerEnd, WorkerReport, Workers,
};

/// Time given to the workers to start and connect before they all begin.
const START_DELAY: Duration = Duration::from_millis(600);

#[derive(Debug, Serialize)]
struct Report {
    processes: usize,
    /// Who held the coordinator role: `elected` (a worker), `tollgate serve`, or
    /// `stand-in` (the bench's stand-in of another shape, `--stand-in`).
    coordinator: &'static str,
    floor_style: EchoStyle,
    requests_per_process: usize,
    rounds: usize,
    rate_per_second: Option<f64>,
    burst: Option<f64>,
    admitted: usize,
    elapsed_s: f64,
    ideal_s: f64,
    max_starts_in_any_window: u64,
    window_limit: u64,
    window_s: f64,
    coordinator_pid: Option<u32>,
    admission: Row,
    echo_floor: Row,
    peer: Option<Row>,
    /// The peer's grants in any 1 s window (its `Rate(rate, SECOND)` allows `rate`).
    peer_max_starts_in_any_window: Option<u64>,
    throughput_ratio_to_peer: Option<f64>,
    p50_ratio_to_echo: f64,
    p99_ratio_to_echo: f64,
    throughput_ratio_to_echo: f64,
    /// Admission workers that ended without a report (killed, crashed): the figures are
    /// the survivors', who were waited for to the end.
    lost_workers: Vec<LostWorker>,
}

/// An admission worker that did not report, and in which round.
#[derive(Debug, Serialize)]
struct LostWorker {
    round: usize,
    #[serde(flatten)]
    end: WorkerEnd,
}

/// One run: set-up (`Setup`: the directories, the workers' arguments, a dedicated
/// coordinator and the peer's Python if asked), the rounds, then the report.
pub fn run(args: &Processes) -> anyhow::Result<ExitCode> {
    let mut setup = Setup::start(args)?;
    let rounds = setup.run_rounds(args)?;
    let serve_pid = match setup.server.take() {
        Some(server) => Some(server.stop()?),
        None => None,
    };
    let report = setup.report(args, &rounds, serve_pid)?;
    let failures = failures(&report);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_text(&report);
    }
    Ok(verdict(&failures))
}

/// What a run needs, and what it started: dropped, it kills a dedicated coordinator still
/// running, then removes the temporary directory.
struct Setup {
    /// Worker processes per round.
    processes: usize,
    /// Admissions per process, over all rounds.
    n: usize,
    rounds: usize,
    policy: Policy,
    /// A finite `--rate`: the pacing is measured too.
    limited: bool,
    /// This executable, the workers'.
    exe: PathBuf,
    /// The admission workers' arguments: the directory and, with a rate, the policy.
    extra: Vec<String>,
    /// The dedicated `tollgate serve` (`--serve`); `None` once stopped.
    server: Option<DedicatedCoordinator>,
    /// The peer's interpreter (`--peer pyrate`).
    python: Option<PathBuf>,
    tmp: tempfile::TempDir,
}

/// Each side's worker reports, one entry per round.
struct Rounds {
    echo: Vec<Vec<WorkerReport>>,
    admission: Vec<Vec<WorkerReport>>,
    /// Empty without a peer.
    peer: Vec<Vec<WorkerReport>>,
    /// Admission workers that did not report, with their round.
    lost: Vec<LostWorker>,
}

impl Setup {
    fn start(args: &Processes) -> anyhow::Result<Setup> {
        let processes = args.processes.max(1);
        let n = args.requests.max(1);
        let policy = bench_policy(args.rate, args.burst)?;
        let limited = args.rate > 0.0;
        let tmp = tempfile::tempdir().context("creating a temporary directory")?;
        let dir = match &args.dir {
            Some(d) => d.clone(),
            None => tmp.path().join("admission"),
        };
        if let Some(log) = &args.log {
            std::fs::create_dir_all(log).with_context(|| format!("creating {}", log.display()))?;
        }
        let exe = crate::harness::exe::bench()?;
        let rounds = usize::from(args.rounds.unwrap_or(if limited { 1 } else { 3 })).min(n);
        let mut extra = vec!["--dir".to_owned(), dir.display().to_string()];
        if limited {
            extra.extend(["--rate".into(), args.rate.to_string()]);
            extra.extend(["--burst".into(), args.burst.to_string()]);
        }
        let (server, peer) = match args.coordinator {
            Coordinator::Elected => (None, None),
            Coordinator::Served { peer } => (
                Some(DedicatedCoordinator::start(
                    &crate::harness::exe::tollgate()?,
                    &dir,
                )?),
                peer,
            ),
            Coordinator::StandIn => (
                Some(DedicatedCoordinator::start_stand_in(&exe, &dir)?),
                None,
            ),
        };
        let mut setup = Setup {
            processes,
            n,
            rounds,
            policy,
            limited,
            exe,
            extra,
            server,
            python: None,
            tmp,
        };
        setup.python = match peer {
            Some(Peer::Pyrate) => Some(crate::admission::pyrate::python_with_pyrate()?),
            None => None,
        };
        Ok(setup)
    }

    /// The rounds: in each, the echo floor, the admissions, then the peer, each with the
    /// round's share of the requests.
    fn run_rounds(&self, args: &Processes) -> anyhow::Result<Rounds> {
        let (processes, n, rounds) = (self.processes, self.n, self.rounds);
        let mut out = Rounds {
            echo: Vec::with_capacity(rounds),
            admission: Vec::with_capacity(rounds),
            peer: Vec::new(),
            lost: Vec::new(),
        };
        for round in 0..rounds {
            // The first `n % rounds` rounds take one request more.
            let share = n / rounds + usize::from(round < n % rounds);
            let socket = self.tmp.path().join(format!("echo-{round}.sock"));
            out.echo.push(
                echo_floor(&self.exe, &socket, args.floor, processes, share)?.all_reported()?,
            );
            let admission = spawn_workers(
                &self.exe,
                processes,
                share,
                &self.extra,
                args.log.as_deref(),
            )?;
            out.lost.extend(admission.lost().map(|end| LostWorker {
                round,
                end: end.clone(),
            }));
            out.admission.push(admission.reports);
            if let Some(python) = &self.python {
                out.peer.push(crate::admission::pyrate::measure(
                    python,
                    processes,
                    share,
                    args.rate,
                    self.tmp.path(),
                )?);
            }
        }
        Ok(out)
    }

    /// The run's figures from its rounds; refused if a worker took the coordinator role
    /// from the dedicated `serve` (pid `serve_pid`).
    fn report(
        &self,
        args: &Processes,
        rounds: &Rounds,
        serve_pid: Option<u32>,
    ) -> anyhow::Result<Report> {
        let (policy, limited) = (&self.policy, self.limited);
        let reports: Vec<&WorkerReport> = rounds.admission.iter().flatten().collect();
        if let Some(pid) = serve_pid {
            anyhow::ensure!(
                reports.iter().all(|r| !r.coordinator),
                "a worker took the coordinator role from the dedicated `serve` process {pid}"
            );
        }
        let peer = self
            .python
            .is_some()
            .then(|| summarize(crate::admission::pyrate::SUBJECT, &rounds.peer));
        let peer_max_starts_in_any_window = self.python.is_some().then(|| {
            let mut grants: Vec<u64> = rounds
                .peer
                .iter()
                .flatten()
                .flat_map(|r| r.granted_at_us.iter().copied())
                .collect();
            grants.sort_unstable();
            max_in_window(&grants, Duration::from_secs(1))
        });
        let echo = summarize("unix-socket echo (64 B round trip)", &rounds.echo);
        let admission = summarize("cross-process admission", &rounds.admission);
        let mut grants: Vec<u64> = reports
            .iter()
            .flat_map(|r| r.granted_at_us.clone())
            .collect();
        grants.sort_unstable();
        let shape = WindowShape::for_rate(policy.rate_per_second());
        // Each round starts with the burst the echo phase before it let refill.
        let ideal_s = if limited {
            rounds
                .admission
                .iter()
                .map(|round| {
                    let admitted: usize = round.iter().map(|r| r.granted_at_us.len()).sum();
                    ((admitted as f64 - policy.burst()) / policy.rate_per_second()).max(0.0)
                })
                .sum()
        } else {
            0.0
        };
        let throughput = |row: &Row| row.throughput_per_s.unwrap_or(0.0);
        Ok(Report {
            processes: self.processes,
            coordinator: match args.coordinator {
                Coordinator::Elected => "elected",
                Coordinator::Served { .. } => "tollgate serve",
                Coordinator::StandIn => "stand-in",
            },
            floor_style: args.floor,
            requests_per_process: self.n,
            rounds: self.rounds,
            rate_per_second: limited.then_some(args.rate),
            burst: limited.then_some(args.burst),
            admitted: grants.len(),
            elapsed_s: rounds.admission.iter().map(|r| span_s(r)).sum(),
            ideal_s,
            max_starts_in_any_window: max_in_window(&grants, shape.length),
            window_limit: shape.limit,
            window_s: shape.length.as_secs_f64(),
            coordinator_pid: serve_pid.or(reports.iter().find(|r| r.coordinator).map(|r| r.pid)),
            p50_ratio_to_echo: ratio(admission.p50_us, echo.p50_us),
            p99_ratio_to_echo: ratio(admission.p99_us, echo.p99_us),
            throughput_ratio_to_echo: ratio(throughput(&admission), throughput(&echo)),
            throughput_ratio_to_peer: peer
                .as_ref()
                .map(|p| ratio(throughput(&admission), throughput(p))),
            admission,
            echo_floor: echo,
            peer,
            peer_max_starts_in_any_window,
            lost_workers: rounds
                .lost
                .iter()
                .map(|l| LostWorker {
                    round: l.round,
                    end: l.end.clone(),
                })
                .collect(),
        })
    }
}

/// The table of the two sides (and the peer), the run's shape and its ratios.
fn print_text(report: &Report) {
    let mut rows = vec![report.admission.clone(), report.echo_floor.clone()];
    rows.extend(report.peer.clone());
    print_table(&rows);
    println!();
    println!(
        "processes {} x {} admissions in {} round(s), alternating with the echo, coordinator \
         {}: admitted {}, elapsed {:.3} s, ideal {:.3} s",
        report.processes,
        report.requests_per_process,
        report.rounds,
        report.coordinator,
        report.admitted,
        report.elapsed_s,
        report.ideal_s
    );
    println!(
        "max starts in any {:.0} s window: {} (limit {})",
        report.window_s, report.max_starts_in_any_window, report.window_limit
    );
    println!(
        "ratios to the echo floor ({}): p50 {:.2}x, p99 {:.2}x, throughput {:.0}%",
        report.floor_style.name(),
        report.p50_ratio_to_echo,
        report.p99_ratio_to_echo,
        report.throughput_ratio_to_echo * 100.0
    );
    if let (Some(peer), Some(r)) = (&report.peer, report.throughput_ratio_to_peer) {
        println!(
            "ratio to {}: throughput {:.1}x, p50 {:.2}x lower",
            peer.subject,
            r,
            ratio(peer.p50_us, report.admission.p50_us)
        );
    }
}

/// Why this run's figures cannot be trusted: a floor above what it floors (then it is no
/// floor, and every ratio to it flatters tollgate), or more grants in a window than the
/// policy allows.
fn failures(report: &Report) -> Vec<String> {
    let mut out = Vec::new();
    let (floor, ours) = (&report.echo_floor, &report.admission);
    for (name, f, a) in [
        ("p50", floor.p50_us, ours.p50_us),
        ("p99", floor.p99_us, ours.p99_us),
    ] {
        if f > a {
            out.push(format!(
                "the echo floor's {name} ({f:.1} µs) is above tollgate's ({a:.1} µs): the floor \
                 is not a floor on this run, so its ratios are not reported as valid"
            ));
        }
    }
    for lost in &report.lost_workers {
        out.push(format!(
            "round {}: {}; its admissions are missing from the figures (the survivors \
             were waited for and are reported)",
            lost.round + 1,
            describe(&lost.end)
        ));
    }
    if report.max_starts_in_any_window > report.window_limit {
        out.push(format!(
            "{} grants in one {:.0} s window, above the limit of {}",
            report.max_starts_in_any_window, report.window_s, report.window_limit
        ));
    }
    out
}

/// Print each failure on stderr; exit non-zero if there is one.
fn verdict(failures: &[String]) -> ExitCode {
    for f in failures {
        eprintln!("bench admission: FAILED: {f}");
    }
    if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

/// One side's figures pooled over its rounds: every sample, and throughput over the sum
/// of the rounds' spans.
fn summarize(subject: &str, rounds: &[Vec<WorkerReport>]) -> Row {
    let latencies: Vec<Duration> = rounds
        .iter()
        .flatten()
        .flat_map(|r| r.latencies_us.iter().map(|&u| Duration::from_micros(u)))
        .collect();
    let span: f64 = rounds.iter().map(|r| span_s(r)).sum();
    let throughput = (span > 0.0).then(|| latencies.len() as f64 / span);
    Row::new(subject, latencies, throughput)
}

fn spawn_workers(
    exe: &Path,
    processes: usize,
    n: usize,
    extra: &[String],
    log: Option<&Path>,
) -> anyhow::Result<Collected> {
    let start_at = unix_now().as_micros() + START_DELAY.as_micros() as u64;
    // Dropped on an error, it kills the workers already started.
    let mut children = Workers::default();
    for i in 0..processes {
        let mut cmd = Command::new(exe);
        cmd.arg(crate::harness::exe::WORKER)
            .args(["--requests", &n.to_string()])
            .args(["--start-at-us", &start_at.to_string()])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if let Some(log) = log {
            cmd.arg("--log").arg(log.join(format!("worker-{i}.jsonl")));
        }
        children.push(cmd.spawn().context("spawning a bench worker")?);
    }
    Ok(children.collect())
}

/// Run P echo clients (child processes) against a bare echo server in this process,
/// both in `style` (see `crate::harness::echo`).
fn echo_floor(
    exe: &Path,
    socket: &Path,
    style: EchoStyle,
    processes: usize,
    n: usize,
) -> anyhow::Result<Collected> {
    let _server = EchoServer::start(socket, style)?;
    let extra = vec![
        "--echo".to_owned(),
        socket.display().to_string(),
        "--echo-style".to_owned(),
        style.name().to_owned(),
    ];
    spawn_workers(exe, processes, n, &extra, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(p50_us: f64, p99_us: f64) -> Row {
        Row {
            subject: String::new(),
            samples: 1,
            p50_us,
            p99_us,
            max_us: p99_us,
            throughput_per_s: None,
        }
    }

    fn report(floor: Row, ours: Row, max_in_window: u64) -> Report {
        Report {
            processes: 4,
            coordinator: "tollgate serve",
            floor_style: EchoStyle::Blocking,
            requests_per_process: 1,
            rounds: 1,
            rate_per_second: None,
            burst: None,
            admitted: 4,
            elapsed_s: 1.0,
            ideal_s: 0.0,
            max_starts_in_any_window: max_in_window,
            window_limit: 20,
            window_s: 1.0,
            coordinator_pid: None,
            admission: ours,
            echo_floor: floor,
            peer: None,
            peer_max_starts_in_any_window: None,
            throughput_ratio_to_peer: None,
            p50_ratio_to_echo: 1.0,
            p99_ratio_to_echo: 1.0,
            throughput_ratio_to_echo: 1.0,
            lost_workers: Vec::new(),
        }
    }

    #[test]
    fn a_floor_above_tollgate_or_a_broken_window_fails_the_run() {
        assert!(failures(&report(row(20.0, 40.0), row(30.0, 40.0), 20)).is_empty());
        let p50 = failures(&report(row(31.0, 40.0), row(30.0, 90.0), 20));
        assert!(p50.len() == 1 && p50[0].contains("p50"), "{p50:?}");
        let p99 = failures(&report(row(20.0, 91.0), row(30.0, 90.0), 20));
        assert!(p99.len() == 1 && p99[0].contains("p99"), "{p99:?}");
        let window = failures(&report(row(20.0, 40.0), row(30.0, 90.0), 21));
        assert!(
            window.len() == 1 && window[0].contains("above the limit of 20"),
            "{window:?}"
        );
        let mut killed = report(row(20.0, 40.0), row(30.0, 40.0), 20);
        killed.lost_workers.push(LostWorker {
            round: 0,
            end: WorkerEnd::Killed { pid: 7, signal: 9 },
        });
        let lost = failures(&killed);
        assert!(
            lost.len() == 1 && lost[0].contains("round 1: worker 7 was killed by signal 9"),
            "{lost:?}"
        );
    }
}
