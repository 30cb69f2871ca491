//! Command-line definitions (clap) and dispatch. Each subcommand lives in its own file.

mod bench;
mod catalog;
mod demo;
mod discover;
mod discover_catalog;
mod discover_org;
mod fleet;
mod history;
mod logging;
mod policies;
mod policies_at;
mod replay;
mod scans;
mod serve;
mod simulate;
mod status;
mod status_live;
mod store;
mod types;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// tollgate: AWS resource discovery where every API call passes one shared admission gate.
///
/// Environment: TOLLGATE_ADMISSION_DIR (shared admission directory), TOLLGATE_QUOTA_OVERRIDES
/// (JSON policy overrides keyed by service:group), RUST_LOG (log filter).
#[derive(Debug, Parser)]
#[command(name = "tollgate", version, about, long_about = None)]
pub struct Cli {
    /// Log more (-v debug, including the AWS libraries' warnings; -vv trace); RUST_LOG
    /// overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Discover AWS resources (S3 buckets, Lambda functions, DynamoDB tables, KMS keys)
    /// through the shared admission gate; write a JSON report. Exit code: 0 complete,
    /// 2 partial, 130 cancelled, 1 error or a failed dataset.
    Discover(discover::DiscoverArgs),
    /// Discover a simulated account, no AWS account needed: start the fixture AWS
    /// simulator in-process on the bundled demo scenario and run `discover` through it
    /// (fake credentials). Exit code as `discover`.
    Demo(demo::DemoArgs),
    /// Serve the fixture AWS simulator for a scenario file on loopback until SIGTERM or
    /// Ctrl-C, then print what it received per operation.
    Simulate(simulate::SimulateArgs),
    /// Print the effective quota policies: defaults merged with TOLLGATE_QUOTA_OVERRIDES.
    Policies {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Resolve schedules and allowances at this instant (RFC 3339), showing each
        /// key's policy in force, until when it holds, and allowance periods.
        #[arg(long, value_name = "RFC3339")]
        at: Option<String>,
    },
    /// List the resource types tollgate knows: CloudFormation name, dataset alias, how it
    /// is collected (native, or tags-only from the tagging sweep), whether a scan collects
    /// it by default, and whether CloudFormation has the type.
    Types {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Dry-run policies: replay a script of requests and scripted answers through the real
    /// quota actors and retry owner in simulated time, and print when each attempt would
    /// be dispatched. Exit code: 0 when it ran, 1 for an invalid script.
    Replay {
        /// The replay script (JSON; format in docs/replay.md).
        script: PathBuf,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Seed of the backoff jitter (a replay with the same seed is reproducible).
        #[arg(long, default_value_t = tollgate_replay::DEFAULT_SEED)]
        seed: u64,
    },
    /// Print the quota state held in the admission directory.
    Status {
        /// Admission directory (default: TOLLGATE_ADMISSION_DIR, else the user cache).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Run the discovery service (HTTP API, scheduled and on-demand scans, history) and
    /// hold the coordinator role for the admission directory until SIGTERM or Ctrl-C,
    /// then hand it over gracefully.
    Serve(serve::ServeArgs),
    /// Talk to the local discovery service (`tollgate serve`): submit, list, show,
    /// cancel scans and fetch reports.
    Scans(scans::ScansArgs),
    /// Run a benchmark and print a table (`tollgate bench --help` lists them).
    ///
    /// The benchmarks are a separate executable, tollgate-bench, found beside this one or
    /// on PATH; `cargo build -p tollgate-bench --profile bench-fast` builds it.
    Bench(bench::BenchArgs),
    /// List the resources in the inventory store (written by `discover --store`): the
    /// current view, filtered like `discover` (docs/inventory.md).
    Resources(store::ResourcesArgs),
    /// List what changed between stored scans: added, modified (which fields), removed
    /// (proven gone by a complete listing) and not verified (docs/inventory.md).
    Changes(store::ChangesArgs),
    /// Show one resource's versions in the inventory store, newest first, with the fields
    /// each changed (docs/inventory.md).
    History(history::HistoryArgs),
    /// The Resource Explorer catalog: `status` (each region's index and default view)
    /// and `init` (turn it on: indexes, an aggregator, a default view; explicit only).
    Catalog(catalog::CatalogArgs),
    /// Fleet mode (one quota across hosts on DynamoDB): `init` creates the table and
    /// prints the IAM policy; `status` shows each key's item. Settings: TOLLGATE_FLEET_*.
    Fleet(fleet::FleetArgs),
}

/// Run a parsed command line; the exit code on success.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    // Fleet settings (TOLLGATE_FLEET_*) are read only by the commands that may coordinate
    // (discover, demo, serve, a live status), into the spec they join admission with; the
    // others never read them, so a malformed one cannot break `tollgate policies`.
    match cli.command {
        Command::Discover(args) if args.organization.organization => discover_org::run(args),
        Command::Discover(args) => discover::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Simulate(args) => simulate::run(args),
        Command::Policies { json, at: None } => policies::run(json),
        Command::Policies { json, at: Some(at) } => policies_at::run(&at, json),
        Command::Types { json } => types::run(json),
        Command::Replay { script, json, seed } => replay::run(&script, json, seed),
        Command::Status { dir, json } => status::run(dir, json),
        Command::Serve(args) => serve::run(args),
        Command::Scans(args) => scans::run(args),
        Command::Bench(args) => bench::run(args, cli.verbose),
        Command::Fleet(args) => fleet::run(args),
        Command::Catalog(args) => catalog::run(args),
        Command::Resources(args) => store::resources(args),
        Command::Changes(args) => store::changes(args),
        Command::History(args) => history::run(args),
    }
}

pub use logging::init_tracing;
