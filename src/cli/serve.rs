//! `tollgate serve`: hold the coordinator role for an admission directory and run the
//! discovery service (HTTP API, scan manager, history; see the `tollgate-service` crate)
//! until SIGTERM or Ctrl-C, then hand the role over gracefully. The election, the start
//! order and the hand-over are `tollgate_service::serve_until`'s; this file parses the
//! flags and settings, calls it with the signals as its shutdown, and prints its events.
//! The first line on stdout is `tollgate serve: listening on http://HOST:PORT`.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use tokio::signal::unix::{signal, SignalKind};
use tollgate_actors::TokioClock;
use tollgate_engine::aws::telemetry::{FileTelemetry, TelemetrySink};
use tollgate_service::{serve_until, ServeEvent, ServeSetup, ServiceConfig, StateDir, StateDirEnv};
use tollgate_storage::AdmissionDir;

/// `tollgate serve` flags.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Admission directory (default: TOLLGATE_ADMISSION_DIR, else the user cache).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// The service's configuration (TOML: targets, schedules, limits; see
    /// docs/service.md). Without it the service runs on-demand scans only.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Where the HTTP API listens (port 0 picks a free port).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7878")]
    pub listen: SocketAddr,
    /// Write one JSON line per admission or physical attempt of every scan here (as
    /// `tollgate discover --telemetry`).
    #[arg(long, value_name = "FILE")]
    pub telemetry: Option<PathBuf>,
}

pub fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let config = tollgate_engine::EngineConfig::from_env()?.with_admission_dir(args.dir);
    // Everything is validated before anything starts.
    let service_config = match &args.config {
        Some(path) => ServiceConfig::load(path)?,
        None => ServiceConfig::default(),
    };
    // Fleet mode from TOLLGATE_FLEET_*, or from `[fleet]` where a variable that is set wins
    // over the file's value (docs/fleet.md).
    let fleet = match &service_config.fleet {
        Some(file) => tollgate_fleet::FleetValues::from_env()?
            .or(file.clone())
            .settings(),
        None => tollgate_fleet::FleetSettings::from_env()?,
    };
    let state_dir = StateDir::resolve(&StateDirEnv::from_process_env())?;
    let dir = AdmissionDir::resolve(&config.dir_env)?;
    let telemetry: Option<Arc<dyn TelemetrySink>> = match args.telemetry.as_deref() {
        Some(path) => Some(Arc::new(FileTelemetry::create(path).with_context(
            || format!("creating the telemetry file {}", path.display()),
        )?)),
        None => None,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let setup = ServeSetup {
        dir,
        policies: config.policies,
        fleet: fleet.map(tollgate_fleet::spec),
        config: service_config,
        state_dir,
        listen: args.listen,
        clock: Arc::new(TokioClock::system()),
        telemetry,
    };
    rt.block_on(serve(setup))
}

async fn serve(setup: ServeSetup) -> anyhow::Result<ExitCode> {
    let mut term = signal(SignalKind::terminate()).context("installing a SIGTERM handler")?;
    let mut int = signal(SignalKind::interrupt()).context("installing a SIGINT handler")?;
    let shutdown = async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    };
    let (dir, state) = (
        setup.dir.path().display().to_string(),
        setup.state_dir.path().display().to_string(),
    );
    let mut printed = Ok(());
    let print = |event: ServeEvent| {
        if let Err(e) = print_event(&event, &dir, &state) {
            printed = Err(e);
        }
    };
    serve_until(setup, print, shutdown).await?;
    printed?;
    Ok(ExitCode::SUCCESS)
}

/// Print one of the service's events: the listening line on stdout (the first line, which
/// scripts wait for), the rest on stderr.
fn print_event(event: &ServeEvent, dir: &str, state: &str) -> std::io::Result<()> {
    match event {
        ServeEvent::Waiting { holder } => {
            let holder = holder.map_or("another process".into(), |pid| format!("pid {pid}"));
            eprintln!("tollgate serve: {holder} coordinates {dir}; waiting to take over");
        }
        ServeEvent::Listening { addr, generation } => {
            let mut out = std::io::stdout().lock();
            writeln!(out, "tollgate serve: listening on http://{addr}")?;
            out.flush()?;
            eprintln!(
                "tollgate serve: pid {} coordinates {dir} (generation {generation}); state in {state}; SIGTERM or Ctrl-C stops",
                std::process::id(),
            );
        }
        ServeEvent::HandedOver => eprintln!("tollgate serve: handed over cleanly"),
        _ => {}
    }
    Ok(())
}
