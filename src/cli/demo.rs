//! `tollgate demo`: tollgate's main job without an AWS account. Starts the fixture AWS
//! simulator in-process on a loopback port with the bundled demo scenario (two regions,
//! mild server quotas, a short throttle storm), runs a real `tollgate discover` through
//! it — SDK clients, admission gate, retries, progress bars, summary — on the default
//! admission directory, and ends with what the simulated server received.
//!
//! The simulator accepts any credentials; the demo signs with static fake ones (never
//! the user's), passed in the discovery request rather than through the environment.
//!
//! A scenario that declares an organization (`fixtures/scenarios/org.toml`) gets an
//! organization scan instead (`discover --organization --regions all`): every member
//! through its role, each account's regions from its ListRegions, falling back to every
//! region the scenario has.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use tollgate_engine::Engine;
use tollgate_scan::request::RegionSource;
use tollgate_scan::{DiscoveryRequest, OrganizationRequest};
use tollgate_sim::{bundled, Scenario, Simulator};

use super::discover::{run_scan, ReportTo};
use super::discover_org::run_organization;

/// `tollgate demo` flags.
#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Another scenario file instead of the bundled fixtures/scenarios/demo.toml.
    #[arg(long, value_name = "FILE")]
    pub scenario: Option<PathBuf>,
    /// Write the JSON report here (by default the demo shows only the summary).
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Read the Cloud Control items listed with their identifier only in full
    /// (GetResource per item), as `discover --details` does.
    #[arg(long)]
    pub details: bool,
    #[command(flatten)]
    pub scan: super::discover::ScanFlags,
}

/// The demo's fake credentials: the simulator accepts any, and real ones never leave.
fn demo_credentials() -> aws_credential_types::Credentials {
    aws_credential_types::Credentials::new(
        "AKIDTOLLGATEDEMO",
        "tollgate-demo-not-a-secret",
        None,
        None,
        "tollgate-demo",
    )
}

pub fn run(args: DemoArgs) -> anyhow::Result<ExitCode> {
    let scenario = match &args.scenario {
        Some(path) => Scenario::load(path)?,
        None => Scenario::parse(bundled::DEMO, "fixtures/scenarios/demo.toml (bundled)")?,
    };
    let super::discover::ScanEnv {
        config,
        telemetry,
        rt,
    } = super::discover::ScanEnv::new(&args.scan)?;
    let store = args.scan.store.clone();
    rt.block_on(async move {
        let summary = super::simulate::summary(&scenario);
        let regions = scenario.regions.clone();
        let sim = Simulator::new(scenario);
        let server = sim
            .serve(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
            .await
            .context("starting the simulator on loopback")?;
        eprintln!(
            "tollgate demo: simulated AWS on {} — {summary}\n\
             tollgate demo: discovering it through tollgate's admission gate (fake credentials)\n",
            server.endpoint_url()
        );
        let mut request = DiscoveryRequest {
            regions,
            datasets: demo_datasets(sim.scenario()),
            endpoint_url: Some(server.endpoint_url()),
            timeout: args.scan.timeout,
            credentials: Some(demo_credentials()),
            details: super::discover::details(args.details),
            // The simulator serves the price list too: the demo prices its transit
            // gateways from it, and nothing leaves the machine.
            pricing: Some(server.endpoint_url()),
            ..Default::default()
        };
        let report_to = match &args.output {
            Some(path) => ReportTo::File(path),
            None => ReportTo::Nowhere,
        };
        let organization = sim.scenario().organization.as_ref().map(|org| {
            let mut fallback: Vec<String> = request.regions.clone();
            fallback.extend(org.members.iter().flat_map(|m| m.scenario.regions.clone()));
            request.regions = Vec::new();
            request.region_source = RegionSource::Enabled { fallback };
            OrganizationRequest::new(request.clone())
        });
        let outcome = async {
            let engine = Engine::open(config)?;
            let outcome = match organization {
                Some(org) => {
                    run_organization(&engine, org, report_to, telemetry, store.as_deref()).await
                }
                None => run_scan(&engine, request, report_to, telemetry, store.as_deref()).await,
            };
            engine.close().await?;
            outcome
        }
        .await;
        server.shutdown().await;
        let stats = sim.stats();
        eprintln!(
            "\nsimulated AWS received {} requests: {} served, {} throttled (server quotas and the scenario's throttle storm), {} 5xx",
            stats.totals.received, stats.totals.served, stats.totals.throttled, stats.totals.faulted
        );
        eprint!("{}", stats.table());
        if args.output.is_none() {
            eprintln!("(pass --output FILE to keep the JSON report)");
        }
        outcome
    })
}

/// The default datasets and every Cloud Control type the scenario's accounts declare (the
/// demo shows the sweep on the types its simulated estate has, rather than 38 types the
/// simulator does not know).
fn demo_datasets(scenario: &tollgate_sim::Scenario) -> Vec<tollgate_collectors::Dataset> {
    let members = scenario
        .organization
        .iter()
        .flat_map(|org| org.members.iter().map(|m| &m.scenario));
    let mut datasets = tollgate_collectors::Dataset::defaults();
    for s in std::iter::once(scenario).chain(members) {
        datasets.extend(
            s.cloudcontrol
                .types
                .keys()
                .filter_map(|t| tollgate_collectors::Dataset::cloudcontrol(t)),
        );
    }
    datasets.sort_unstable();
    datasets.dedup();
    datasets
}
