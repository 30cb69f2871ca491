//! `tollgate catalog status|init`: the Resource Explorer catalog (docs/discovery.md,
//! "Catalog"). The work is `tollgate_scan::catalog`'s; this file parses the flags, runs
//! it on the engine's admission and prints a table or JSON.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use tokio_util::sync::CancellationToken;
use tollgate_collectors::catalog::setup::{Change, InitPlan, InitReport};
use tollgate_collectors::catalog::{Evidence, RegionState};
use tollgate_engine::Engine;
use tollgate_scan::catalog::{catalog_init, catalog_status, CatalogStatus};
use tollgate_scan::request::AssumeRole;
use tollgate_scan::scan_setup::SupervisorDeps;
use tollgate_scan::DiscoveryRequest;
use tollgate_service::parse_duration;

use super::discover::{preflight, region_flags, ScanEnv, ScanFlags};
use super::discover_catalog::deps;

/// Exit code of a status with an unavailable region.
const EXIT_PARTIAL: u8 = 2;

/// `tollgate catalog` subcommands.
#[derive(Debug, clap::Args)]
pub struct CatalogArgs {
    #[command(subcommand)]
    pub command: CatalogCommand,
}

/// What `tollgate catalog` does.
#[derive(Debug, clap::Subcommand)]
pub enum CatalogCommand {
    /// Each region's Resource Explorer index (type, state) and default view (filter,
    /// scope), 5 regions at once; a region whose probe fails twice is `unavailable` with
    /// the evidence. Exit code: 0, 2 with an unavailable region, 1 error.
    Status(CatalogFlags),
    /// Turn Resource Explorer on: an index in each region lacking one (polled until
    /// ACTIVE), optionally one region promoted to the aggregator, and a default view
    /// where none exists. Changes nothing that exists. Exit code: 0 set up, 1 otherwise.
    Init {
        /// Promote this region's index to the account's aggregator (one per account).
        #[arg(long, value_name = "REGION")]
        aggregator: Option<String>,
        #[command(flatten)]
        flags: CatalogFlags,
    },
}

/// The flags both subcommands take.
#[derive(Debug, clap::Args)]
pub struct CatalogFlags {
    /// Regions, comma-separated (default: the configured region); `all`: every region
    /// enabled for the account, else --regions-fallback.
    #[arg(long, value_delimiter = ',', value_name = "REGION")]
    pub regions: Vec<String>,
    /// With `--regions all`: the regions used where the account's regions cannot be listed.
    #[arg(long, value_delimiter = ',', value_name = "REGION")]
    pub regions_fallback: Vec<String>,
    /// Send every AWS request to this endpoint (an emulator or the simulator).
    #[arg(long, value_name = "URL")]
    pub endpoint_url: Option<String>,
    /// AWS profile (default: the default credential chain).
    #[arg(long, value_name = "PROFILE")]
    pub profile: Option<String>,
    /// Act in another account: assume this IAM role first.
    #[arg(long, value_name = "ARN")]
    pub role_arn: Option<String>,
    /// Deadline for the whole command (90s, 5m, ...).
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Write one JSON line per admission or physical attempt here.
    #[arg(long, value_name = "FILE")]
    pub telemetry: Option<PathBuf>,
    /// Admission directory (default: TOLLGATE_ADMISSION_DIR, else the user cache).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Run `tollgate catalog ...`.
pub fn run(args: CatalogArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        CatalogCommand::Status(flags) => {
            let json = flags.json;
            let status = on_engine(flags, |request, deps, cancel| async move {
                Ok(catalog_status(request, deps, cancel).await?)
            })?;
            print_status(&status, json)
        }
        CatalogCommand::Init { aggregator, flags } => {
            let json = flags.json;
            let plan = InitPlan { aggregator };
            let report = on_engine(flags, |request, deps, cancel| async move {
                Ok(catalog_init(request, plan, deps, cancel).await?)
            })?;
            print_init(&report, json)
        }
    }
}

/// Validate the flags into a request, open the engine and run `work` on it, cancelled
/// by Ctrl-C.
fn on_engine<T, Fut>(
    flags: CatalogFlags,
    work: impl FnOnce(DiscoveryRequest, SupervisorDeps, CancellationToken) -> Fut,
) -> anyhow::Result<T>
where
    Fut: std::future::Future<Output = anyhow::Result<T>>,
{
    let env = ScanEnv::new(&ScanFlags {
        timeout: flags.timeout,
        telemetry: flags.telemetry.clone(),
        dir: flags.dir.clone(),
        store: None,
    })?;
    let (regions, region_source) = region_flags(flags.regions, flags.regions_fallback)?;
    let request = DiscoveryRequest {
        regions,
        region_source,
        endpoint_url: flags.endpoint_url,
        profile: flags.profile,
        timeout: flags.timeout,
        role: flags.role_arn.map(|role_arn| AssumeRole {
            role_arn,
            external_id: None,
            session_name: None,
        }),
        ..DiscoveryRequest::default()
    }
    .validate()?;
    let ScanEnv {
        config,
        telemetry,
        rt,
    } = env;
    rt.block_on(async move {
        preflight(&request).await?;
        let engine = Engine::open(config)?;
        let deps = deps(&engine, telemetry);
        let cancel = CancellationToken::new();
        let on_interrupt = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                on_interrupt.cancel();
            }
        });
        let outcome = work(request, deps, cancel).await;
        engine.close().await?;
        outcome
    })
}

fn evidence_line(e: &Evidence) -> String {
    format!(
        "{} {} after {} attempt(s): {}{}",
        e.probe,
        e.kind,
        e.attempts,
        e.code
            .as_deref()
            .map(|c| format!("{c}: "))
            .unwrap_or_default(),
        e.message
    )
}

fn print_status(status: &CatalogStatus, json: bool) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    if json {
        let text = serde_json::to_string_pretty(status).context("encoding the status")?;
        writeln!(out, "{text}")?;
    } else {
        writeln!(
            out,
            "account: {}",
            status.account.as_deref().unwrap_or("unresolved")
        )?;
        writeln!(
            out,
            "{:<16} {:<12} {:<22} default view",
            "region", "status", "index"
        )?;
        for r in &status.regions {
            let (index, view) = match &r.state {
                RegionState::NoIndex => ("-".to_string(), "-".to_string()),
                RegionState::Indexed {
                    index,
                    default_view,
                } => (
                    format!("{} {}", index.kind, index.state),
                    default_view.as_ref().map_or("none".into(), |v| {
                        format!(
                            "{} (filter: {})",
                            v.arn,
                            v.filter.as_deref().unwrap_or("none")
                        )
                    }),
                ),
                RegionState::Unavailable { evidence } => ("?".into(), evidence_line(evidence)),
            };
            writeln!(
                out,
                "{:<16} {:<12} {:<22} {view}",
                r.region,
                r.state.label(),
                index
            )?;
        }
    }
    let unavailable = status
        .regions
        .iter()
        .any(|r| matches!(r.state, RegionState::Unavailable { .. }));
    Ok(match unavailable {
        true => ExitCode::from(EXIT_PARTIAL),
        false => ExitCode::SUCCESS,
    })
}

fn change_label(c: &Change) -> String {
    match c {
        Change::CreatedIndex => "created index".into(),
        Change::PromotedToAggregator => "promoted to aggregator".into(),
        Change::CreatedView { arn } => format!("created view {arn}"),
        Change::AssociatedDefaultView { .. } => "made it the default view".into(),
    }
}

fn print_init(report: &InitReport, json: bool) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    if json {
        let text = serde_json::to_string_pretty(report).context("encoding the report")?;
        writeln!(out, "{text}")?;
    } else {
        for r in &report.regions {
            let index = r
                .index
                .as_ref()
                .map_or("-".into(), |i| format!("{} {}", i.kind, i.state));
            let changes: Vec<String> = r.changes.iter().map(change_label).collect();
            let changes = match changes.is_empty() {
                true => "unchanged".to_string(),
                false => changes.join(", "),
            };
            writeln!(out, "{:<16} {:<22} {changes}", r.region, index)?;
            if let Some(e) = &r.error {
                writeln!(out, "{:<16} error: {}", "", evidence_line(e))?;
            }
        }
    }
    Ok(match report.complete() {
        true => ExitCode::SUCCESS,
        false => ExitCode::FAILURE,
    })
}
