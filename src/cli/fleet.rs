//! `tollgate fleet init | status`: the fleet table (crate `tollgate-fleet` does the work).

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use tollgate_fleet::settings::{FleetSettings, TABLE_ENV};
use tollgate_fleet::DynamoFleetStore;

#[derive(Debug, Args)]
pub struct FleetArgs {
    #[command(subcommand)]
    command: FleetCommand,
}

#[derive(Debug, Subcommand)]
enum FleetCommand {
    /// Create the table (on-demand, partition key `key`, TTL on `ttl`) if missing, then
    /// print the IAM policy hosts need.
    Init {
        /// Table name (default: TOLLGATE_FLEET_TABLE).
        #[arg(long)]
        table: Option<String>,
    },
    /// Show each key's item: how far ahead it is reserved, factor, hosts seen recently,
    /// and for a key with a schedule or allowance every host's declaration and the
    /// calendar in force (the strictest among the hosts seen).
    Status {
        /// Table name (default: TOLLGATE_FLEET_TABLE).
        #[arg(long)]
        table: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

fn store(table: Option<String>) -> anyhow::Result<DynamoFleetStore> {
    let settings = FleetSettings::from_lookup(|name| {
        if name == TABLE_ENV {
            if let Some(t) = &table {
                return Some(t.clone());
            }
        }
        std::env::var(name).ok()
    })?
    .with_context(|| format!("no fleet table: pass --table NAME or set {TABLE_ENV}"))?;
    Ok(DynamoFleetStore::new(settings))
}

pub fn run(args: FleetArgs) -> anyhow::Result<ExitCode> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut out = std::io::stdout().lock();
    match args.command {
        FleetCommand::Init { table } => {
            let store = store(table)?;
            let report = rt.block_on(tollgate_fleet::table::create_table(&store))?;
            writeln!(
                out,
                "table {}: {}; TTL on `ttl`: {}",
                report.table,
                if report.created { "created" } else { "exists" },
                match &report.ttl_warning {
                    None => "enabled".to_string(),
                    Some(w) => format!("NOT enabled ({w}); idle items stay until deleted"),
                }
            )?;
            writeln!(out, "IAM policy for hosts (and for `fleet init`):")?;
            writeln!(out, "{}", tollgate_fleet::table::iam_policy(&report.table))?;
        }
        FleetCommand::Status { table, json } => {
            let store = store(table)?;
            let now = tollgate_quota::Clock::now(&tollgate_actors::TokioClock::system());
            let status = rt.block_on(tollgate_fleet::status::fleet_status(&store, now))?;
            if json {
                writeln!(out, "{}", serde_json::to_string_pretty(&status)?)?;
            } else {
                write!(out, "{}", tollgate_fleet::status::render(&status))?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
