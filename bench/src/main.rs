//! `tollgate-bench`: tollgate's benchmarks, run as `tollgate bench ...` (the user binary
//! forwards there) or directly as `tollgate-bench ...`. Separate from the tests, they
//! print tables of percentiles and ratios against a reference floor measured in the same
//! run.
//!
//! Why a crate of its own: the benchmarks are most of the command-line code, need
//! `governor` for a floor, and spawn worker processes through hidden subcommands; in
//! their own executable none of that reaches the user binary or its `--help`.
//!
//! Benchmarks read the wall clock by nature; that is allowed in this crate and nowhere
//! else outside `tollgate_actors::clock`.
//!
//! # Layout
//! One folder (or file) per bench family, each depending only on `harness`:
//! - `admission/`: `bench admission` (`--in-process`, `--processes P`, `--peer pyrate`,
//!   `--stand-in`).
//! - `takeover`: `bench takeover`.
//! - `fleet/`: `bench fleet`, and its plain-SDK worker (hidden `fleet-worker`).
//! - `service`: `bench service`, the service's soak test (RSS over N scans).
//! - `hosts/`: `bench hosts`, fleet mode across simulated hosts on one table.
//! - `metrics`: `bench metrics`, CloudWatch activity on a datapoint-bound scenario.
//! - `org/`: `bench org`, an organization scan (and its hidden `org-coordinator`).
//! - `outage/`: `bench outage`, a DynamoDB outage through a fault proxy in front of moto.
//! - `harness/`: what families share: executables, the worker process (hidden `worker`,
//!   `probe-socket`), the dedicated coordinator, the echo floor, windows, the table.
//!
//! # The shape of a runner
//! Every bench's runner reads in three steps:
//! 1. set-up: a struct holding what the run needs and what it started (`HostsRun`,
//!    `admission::processes::Setup`, fleet's `Launch`, outage's `Setup`): directories,
//!    executables, each process's command, coordinators, tables, simulators. The
//!    coordinators, tables and emulators it started stop on drop, error or not.
//! 2. one run: spawn, wait (`harness::exits` keeps each process's own exit instant),
//!    read back what the processes left.
//! 3. report: a serialisable struct of figures, printed as text or `--json`, then the
//!    run's failures on stderr as `bench <name>: FAILED: ...` and exit 1 if there is one.
//!    What fails a run is decided by a plain function over the figures (`failures`,
//!    `failure`), apart from the printing.
#![forbid(unsafe_code)]

mod admission;
mod fleet;
mod harness;
mod hosts;
mod metrics;
mod org;
mod outage;
mod service;
mod store;
mod takeover;

use harness::{exe, worker};

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// tollgate's benchmarks (also run as `tollgate bench ...`): run one and print a table.
#[derive(Debug, Parser)]
#[command(name = "tollgate-bench", version, about, long_about = None)]
struct Cli {
    /// Log more (-v debug, -vv trace); RUST_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

/// Which benchmark, or which worker process of one.
#[derive(Debug, Subcommand)]
enum Command {
    /// Admission latency and throughput on an unlimited policy.
    Admission(admission::AdmissionArgs),
    /// SIGKILL the coordinator of P real processes mid-run: the gap until a survivor is
    /// granted again, and the window bound across the takeover.
    Takeover(takeover::TakeoverArgs),
    /// K real processes discover one simulated account through the fixture simulator:
    /// tollgate (shared admission) against plain AWS SDK clients (standard / adaptive
    /// retry); throttled responses, retries, completion against the ideal, completeness.
    Fleet(fleet::FleetArgs),
    /// K readers of one account's CloudWatch activity on a datapoint-bound scenario:
    /// tollgate discover --metrics (shared admission) against plain SDK clients; a table of
    /// datapoint throttles per worker kind.
    Metrics(metrics::MetricsArgs),
    /// Soak: N on-demand scans of the demo scenario (fixture simulator) through a real
    /// `tollgate serve`; its RSS after N must stay within 1.2x its RSS after 50.
    Service(service::ServiceArgs),
    /// H simulated hosts (each its own admission directory and `tollgate serve`) share
    /// one key through one DynamoDB table (fleet mode); the token-bucket bound over every
    /// interval of the merged grant logs, DynamoDB requests per admission.
    Hosts(hosts::HostsArgs),
    /// A proxy in front of moto answers 500 to DescribeTable for a while as P real
    /// `tollgate discover` processes share one admission directory: attempts into the
    /// outage (server-side), completion after its end, items lost; `--control`: breakers
    /// off.
    Outage(outage::OutageArgs),
    /// One `tollgate discover --organization --regions all` of a generated organization
    /// (accounts × regions) through the fixture simulator: completion against the ideal
    /// the server quotas allow, calls per account, AssumeRole and ListAccounts counts,
    /// CPU per call, peak RSS of the scanner and the coordinator, live actors.
    Org(org::OrgArgs),
    /// The inventory store (SQLite and PostgreSQL): resources/s of scans written as
    /// `discover --store` writes them, and the `resources --types T --accounts A` query
    /// over 1,000,000 stored resources; min/median/max over --runs runs.
    Store(store::StoreArgs),
    /// The coordinator process of `org` (internal).
    #[command(name = org::coordinator::ORG_COORDINATOR, hide = true)]
    OrgCoordinator(org::coordinator::OrgCoordinatorArgs),
    /// One process of `admission --processes` and `takeover` (internal).
    #[command(name = exe::WORKER, hide = true)]
    Worker(worker::WorkerArgs),
    /// One plain-SDK process of `fleet` (internal).
    #[command(name = exe::FLEET_WORKER, hide = true)]
    FleetWorker(fleet::sdk::FleetWorkerArgs),
    /// The stand-in coordinator of `admission --serve --stand-in` (internal).
    #[command(name = admission::stand_in::STAND_IN, hide = true)]
    StandIn(admission::stand_in::StandInArgs),
    /// Say hello on a coordinator socket and print the answer (diagnostics, internal).
    #[command(hide = true)]
    ProbeSocket {
        /// The socket.
        socket: PathBuf,
    },
}

fn main() -> ExitCode {
    // Usage errors exit 1 as in `tollgate` (help and version exit 0).
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 1 } else { 0 });
        }
    };
    init_tracing(cli.verbose);
    let result = match cli.command {
        Command::Admission(args) => admission::run(&args),
        Command::Takeover(args) => takeover::run(&args),
        Command::Fleet(args) => fleet::run(&args),
        Command::Metrics(args) => metrics::run(&args),
        Command::Service(args) => service::run(&args),
        Command::Hosts(args) => hosts::run(&args),
        Command::Org(args) => org::run(&args),
        Command::OrgCoordinator(args) => org::coordinator::run(&args),
        Command::Outage(args) => outage::run(&args),
        Command::Store(args) => store::run(&args),
        Command::Worker(args) => worker::run(&args),
        Command::FleetWorker(args) => fleet::sdk::run(args),
        Command::ProbeSocket { socket } => worker::probe_socket(&socket),
        Command::StandIn(args) => admission::stand_in::run(&args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("tollgate-bench: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// Logs go to stderr; `-v` raises the level, `RUST_LOG` wins when set.
fn init_tracing(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
