//! `tollgate simulate SCENARIO [--port P]`: serve the fixture AWS simulator on loopback
//! until SIGTERM or Ctrl-C, then print what it received per operation.
//!
//! The first stdout line is exactly `tollgate simulate: listening on http://127.0.0.1:PORT`
//! (flushed at once: benchmarks parse it). Point clients at that URL with any credentials
//! (S3 path-style); requests must be SigV4-signed.

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;

use tollgate_sim::{Scenario, Simulator};

/// `tollgate simulate` flags.
#[derive(Debug, clap::Args)]
pub struct SimulateArgs {
    /// Scenario file (TOML; format in fixtures/README.md, examples in fixtures/scenarios/).
    pub scenario: PathBuf,
    /// Loopback port (0: any free port).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
}

pub fn run(args: SimulateArgs) -> anyhow::Result<ExitCode> {
    let scenario = Scenario::load(&args.scenario)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let summary = summary(&scenario);
        let sim = Simulator::new(scenario);
        let server = sim
            .serve(SocketAddr::from((Ipv4Addr::LOCALHOST, args.port)))
            .await
            .map_err(|e| anyhow::anyhow!("binding 127.0.0.1:{}: {e}", args.port))?;
        {
            let mut out = std::io::stdout().lock();
            writeln!(
                out,
                "tollgate simulate: listening on {}",
                server.endpoint_url()
            )?;
            out.flush()?;
        }
        eprintln!("tollgate simulate: {summary}; SIGTERM or Ctrl-C stops it");
        wait_for_stop().await?;
        server.shutdown().await;
        print!("{}", sim.stats().table());
        std::io::stdout().flush()?;
        Ok(ExitCode::SUCCESS)
    })
}

/// One line about the simulated account.
pub(crate) fn summary(scenario: &Scenario) -> String {
    let c = scenario.inventory_counts();
    let members = match &scenario.organization {
        Some(org) => format!(
            "; the management account of an organization with {} member accounts",
            org.members.len()
        ),
        None => String::new(),
    };
    let ec2 = scenario.ec2_counts();
    let n = |ty: &str| ec2.get(ty).copied().unwrap_or_default();
    let ec2 = match ec2.values().sum::<u64>() {
        0 => String::new(),
        total => format!(
            ", {total} EC2 resources ({} instances, {} volumes, {} VPCs)",
            n("AWS::EC2::Instance"),
            n("AWS::EC2::Volume"),
            n("AWS::EC2::VPC")
        ),
    };
    format!(
        "account {} in {}: {} buckets, {} functions ({} versions), {} tables, {} keys{ec2}{members}",
        scenario.account,
        scenario.regions.join(", "),
        c.buckets,
        c.functions,
        c.versions,
        c.tables,
        c.keys
    )
}

async fn wait_for_stop() -> std::io::Result<()> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        r = tokio::signal::ctrl_c() => r,
        _ = term.recv() => Ok(()),
    }
}
