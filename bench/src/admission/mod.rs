//! `bench admission`: its arguments, validated once into an [`AdmissionMode`], and the
//! two measurements it chooses between: in this process (`in_process`) or across real
//! processes (`processes`, with `pyrate` as a peer).
//!
//! The command line is flat (`--in-process`, or `--processes P` and the options that only
//! mean something with it); [`AdmissionMode::from_args`] turns it into one variant that
//! carries only what that measurement reads, so neither measurement looks at the other's
//! options or re-checks which one it is.
//!
//! # Layout
//! - `in_process`: actors on their own thread against `governor`'s `check()`.
//! - `processes`: P worker processes sharing one admission directory, against a bare
//!   Unix-socket echo (`harness::echo`).
//! - `pyrate`: the peer limiter of `--peer pyrate` (and `pyrate_worker.py`, its process).
//! - `stand_in`: the stand-in coordinator of `--serve --stand-in` (a thread per client
//!   deciding under one lock; not a coordinator), its own process.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::harness::echo::EchoStyle;

mod in_process;
mod processes;
mod pyrate;
pub mod stand_in;

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
    /// With --processes --serve: the coordinator is not `tollgate serve` but the bench's
    /// stand-in of another shape (a thread per client deciding under one lock, nothing
    /// persisted; `admission::stand_in`): what that shape would reach with tollgate's own
    /// clients. Not a coordinator; no peer beside it.
    #[arg(long, requires = "serve", conflicts_with = "peer")]
    pub stand_in: bool,
    /// With --processes: how the echo floor uses its sockets (`blocking` and `read-only`
    /// are at least as lean as tollgate's own socket code; `locked`, `one-thread`,
    /// `two-threads` and `async-client` are the least that a coordinator of that shape
    /// costs; see docs/benchmarks.md, "Admission across processes").
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

/// What `bench admission` measures, with what that measurement reads.
#[derive(Debug, Clone, PartialEq)]
pub enum AdmissionMode {
    /// `--in-process`.
    InProcess(InProcess),
    /// `--processes P`.
    Processes(Processes),
}

/// `--in-process`: admissions through actors on their own thread in this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InProcess {
    /// Admissions per measurement.
    pub requests: usize,
    /// Concurrent callers for the throughput measurement.
    pub callers: usize,
    /// Print JSON instead of a table.
    pub json: bool,
}

/// `--processes P`: P worker processes sharing one admission directory and one key.
#[derive(Debug, Clone, PartialEq)]
pub struct Processes {
    /// How many worker processes.
    pub processes: usize,
    /// Admissions per process.
    pub requests: usize,
    /// The shared key's rate per second (0: unlimited).
    pub rate: f64,
    /// The shared key's burst.
    pub burst: f64,
    /// Who holds the coordinator role.
    pub coordinator: Coordinator,
    /// Rounds alternating the floor and the admissions (`None`: the default for the rate).
    pub rounds: Option<u16>,
    /// The admission directory (`None`: a fresh temporary one).
    pub dir: Option<PathBuf>,
    /// Where the workers write their grant logs.
    pub log: Option<PathBuf>,
    /// How the echo floor uses its sockets.
    pub floor: EchoStyle,
    /// Print JSON instead of a table.
    pub json: bool,
}

/// Who coordinates the workers' admission directory during `--processes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coordinator {
    /// One of the workers, elected (it admits in-process; the others cross the socket).
    Elected,
    /// A dedicated `tollgate serve` (`--serve`): every measured admission crosses the
    /// socket, and only then can a peer limiter be compared (`--peer`).
    Served { peer: Option<Peer> },
    /// The bench's stand-in coordinator of another shape (`--serve --stand-in`).
    StandIn,
}

impl AdmissionMode {
    /// Validate the command line into one mode (clap has already refused the options that
    /// conflict, or that need `--processes` or `--serve` without them).
    pub fn from_args(args: &AdmissionArgs) -> anyhow::Result<AdmissionMode> {
        // Checked here too, not only by clap's `requires`: a `bool` flag's `requires` let
        // `--in-process --serve` through.
        let processes_only = [
            ("--serve", args.serve),
            ("--rounds", args.rounds.is_some()),
            ("--floor", args.floor != EchoStyle::Blocking),
            ("--dir", args.dir.is_some()),
            ("--log", args.log.is_some()),
            ("--stand-in", args.stand_in),
        ];
        if args.processes.is_none() {
            if let Some((flag, _)) = processes_only.iter().find(|(_, given)| *given) {
                anyhow::bail!("{flag} needs --processes P");
            }
        }
        if args.stand_in && !args.serve {
            anyhow::bail!("--stand-in needs --serve (it stands in for `tollgate serve`)");
        }
        if args.peer.is_some() && !args.serve {
            anyhow::bail!(
                "--peer needs --serve (every tollgate admission then crosses the socket)"
            );
        }
        match args.processes {
            Some(processes) => Ok(AdmissionMode::Processes(Processes {
                processes,
                requests: args.requests,
                rate: args.rate,
                burst: args.burst,
                coordinator: match (args.serve, args.stand_in) {
                    (true, true) => Coordinator::StandIn,
                    (true, false) => Coordinator::Served { peer: args.peer },
                    (false, _) => Coordinator::Elected,
                },
                rounds: args.rounds,
                dir: args.dir.clone(),
                log: args.log.clone(),
                floor: args.floor,
                json: args.json,
            })),
            None if args.in_process => Ok(AdmissionMode::InProcess(InProcess {
                requests: args.requests,
                callers: args.callers,
                json: args.json,
            })),
            None => {
                anyhow::bail!("pass --in-process or --processes P to choose an admission benchmark")
            }
        }
    }
}

/// Run `bench admission`.
pub fn run(args: &AdmissionArgs) -> anyhow::Result<ExitCode> {
    match AdmissionMode::from_args(args)? {
        AdmissionMode::InProcess(mode) => in_process::run(&mode),
        AdmissionMode::Processes(mode) => processes::run(&mode),
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: AdmissionArgs,
    }

    fn mode(line: &str) -> anyhow::Result<AdmissionMode> {
        let cli = Cli::try_parse_from(std::iter::once("admission").chain(line.split_whitespace()))?;
        AdmissionMode::from_args(&cli.args)
    }

    fn processes(line: &str) -> Processes {
        match mode(line).unwrap() {
            AdmissionMode::Processes(p) => p,
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn in_process_carries_its_requests_callers_and_output() {
        assert_eq!(
            mode("--in-process --requests 500 --callers 8 --json").unwrap(),
            AdmissionMode::InProcess(InProcess {
                requests: 500,
                callers: 8,
                json: true
            })
        );
        assert_eq!(
            mode("--in-process").unwrap(),
            AdmissionMode::InProcess(InProcess {
                requests: 20_000,
                callers: 4,
                json: false
            })
        );
    }

    #[test]
    fn processes_carry_every_option_that_needs_them() {
        let p = processes(
            "--processes 4 --rate 50 --burst 5 --rounds 2 --dir /d --log /l --floor read-only",
        );
        assert_eq!(
            p,
            Processes {
                processes: 4,
                requests: 20_000,
                rate: 50.0,
                burst: 5.0,
                coordinator: Coordinator::Elected,
                rounds: Some(2),
                dir: Some("/d".into()),
                log: Some("/l".into()),
                floor: EchoStyle::ReadOnly,
                json: false,
            }
        );
    }

    #[test]
    fn serve_makes_a_dedicated_coordinator_and_only_it_carries_a_peer() {
        let table = [
            ("--processes 4", Coordinator::Elected),
            ("--processes 4 --serve", Coordinator::Served { peer: None }),
            (
                "--processes 4 --serve --peer pyrate",
                Coordinator::Served {
                    peer: Some(Peer::Pyrate),
                },
            ),
            ("--processes 4 --serve --stand-in", Coordinator::StandIn),
        ];
        for (line, coordinator) in table {
            assert_eq!(processes(line).coordinator, coordinator, "{line}");
        }
    }

    #[test]
    fn a_run_without_a_mode_or_with_options_out_of_place_is_refused() {
        let no_mode = mode("--requests 10").unwrap_err().to_string();
        assert!(
            no_mode.contains("--in-process or --processes P"),
            "{no_mode}"
        );
        for line in [
            "--in-process --processes 2",
            "--in-process --serve",
            "--processes 2 --peer pyrate",
            "--in-process --floor read-only",
            "--processes 2 --rounds 0",
            "--processes 2 --stand-in",
            "--processes 2 --serve --stand-in --peer pyrate",
            "--in-process --stand-in",
        ] {
            assert!(mode(line).is_err(), "{line} was accepted");
        }
    }
}
