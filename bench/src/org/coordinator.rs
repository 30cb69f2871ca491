//! The hidden `org-coordinator` subcommand: a process of its own holding the run's
//! admission directory as coordinator, so that `bench org` can measure its RSS and CPU
//! apart from the scanning process's, and ask it for its [`Footprint`] (live quota
//! actors), which only the process holding the actors can count.
//!
//! Protocol on its standard streams: it prints `ready` once it coordinates; each line
//! `footprint` on stdin is answered by one JSON line; end of stdin shuts it down.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use tollgate_actors::{connect, CoordinatorSpec, Footprint};
use tollgate_storage::AdmissionDir;

/// The subcommand's name.
pub const ORG_COORDINATOR: &str = "org-coordinator";

/// Arguments of the hidden `org-coordinator`.
#[derive(Debug, Args)]
pub struct OrgCoordinatorArgs {
    /// The admission directory to coordinate.
    #[arg(long)]
    pub dir: PathBuf,
}

/// Coordinate `--dir` until stdin ends.
pub fn run(args: &OrgCoordinatorArgs) -> anyhow::Result<ExitCode> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let dir = AdmissionDir::at(&args.dir)?;
    let joined = connect(&dir, CoordinatorSpec::none())?;
    anyhow::ensure!(
        joined.is_coordinator(),
        "another process already coordinates {}",
        args.dir.display()
    );
    let handle = joined.handle();
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready")?;
    out.flush()?;
    for line in std::io::stdin().lock().lines() {
        let line = line.context("reading stdin")?;
        if line.trim() == "footprint" {
            let footprint: Footprint = rt
                .block_on(handle.footprint())
                .context("this process holds no local actors")??;
            writeln!(out, "{}", serde_json::to_string(&footprint)?)?;
            out.flush()?;
        }
    }
    rt.block_on(joined.shutdown())?;
    Ok(ExitCode::SUCCESS)
}
