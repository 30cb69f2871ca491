//! `bench admission`: its arguments and the choice between the in-process measurement
//! (`in_process`) and the multi-process one (`processes`, with `pyrate` as a peer).

use std::process::ExitCode;

use clap::Args;

use crate::echo::EchoStyle;
use crate::{in_process, processes};

/// Arguments of `tollgate bench admission`.
#[derive(Debug, Args)]
pub struct AdmissionArgs {
    /// Measure admission inside this process (actors on their own thread, real sled
    /// state in a temporary directory), with the governor crate's check as the floor.
    #[arg(long)]
    pub in_process: bool,
    /// Spawn this many real worker processes sharing one admission directory, each
    /// performing `--requests` admissions on one key (a bare Unix-socket echo is measured
    /// in the same run as the floor).
    #[arg(long, conflicts_with = "in_process")]
    pub processes: Option<usize>,
    /// With --processes: the shared key's rate per second (0: unlimited).
    #[arg(long, default_value_t = 0.0)]
    pub rate: f64,
    /// With --processes: the shared key's burst.
    #[arg(long, default_value_t = 1.0)]
    pub burst: f64,
    /// With --processes: a dedicated `tollgate serve` process holds the coordinator role,
    /// so every measured admission crosses the socket (by default one of the workers is
    /// elected and admits in-process, which lowers the aggregate latency).
    #[arg(long, requires = "processes")]
    pub serve: bool,
    /// With --processes: alternate the echo floor and the admissions this many times,
    /// splitting `--requests` between the rounds, and pool the figures (a shared machine's
    /// drift then weighs on both sides alike). Default: 3 when unlimited, 1 with --rate.
    #[arg(long, requires = "processes", value_parser = clap::value_parser!(u16).range(1..))]
    pub rounds: Option<u16>,
    /// With --processes: the admission directory (default: a fresh temporary one).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<std::path::PathBuf>,
    /// With --processes: write one JSON line per admission ({pid, key, granted_at_us})
    /// to DIR/worker-<i>.jsonl.
    #[arg(long, value_name = "DIR")]
    pub log: Option<std::path::PathBuf>,
    /// Admissions per measurement (per process with --processes).
    #[arg(long, default_value_t = 20_000)]
    pub requests: usize,
    /// Concurrent callers for the throughput measurement.
    #[arg(long, default_value_t = 4)]
    pub callers: usize,
    /// With --processes --serve: also run the same workload through a peer limiter, in
    /// each round right after tollgate's admissions, and print the ratio (pyrate:
    /// pyrate-limiter 4.5.1's SQLite bucket, installed from PyPI into the project's .venv
    /// on first use). Needs --serve, so that every tollgate admission crosses the socket
    /// as every peer acquisition crosses its file lock.
    #[arg(long, value_enum, requires = "serve")]
    pub peer: Option<Peer>,
    /// With --processes: how the echo floor uses its sockets (both styles are at least as
    /// lean as tollgate's own socket code; see the README for which was lower where).
    #[arg(long, value_enum, default_value_t = EchoStyle::Blocking, requires = "processes")]
    pub floor: EchoStyle,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// A peer limiter to compare with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Peer {
    /// pyrate-limiter's SQLiteBucket with its file lock (multi-process).
    Pyrate,
}

/// Run `bench admission`.
pub fn run(args: &AdmissionArgs) -> anyhow::Result<ExitCode> {
    match args.processes {
        Some(p) => processes::run(args, p),
        None => {
            anyhow::ensure!(
                args.in_process,
                "pass --in-process or --processes P to choose an admission benchmark"
            );
            in_process::run(args)
        }
    }
}
