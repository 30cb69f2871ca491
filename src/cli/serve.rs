//! `tollgate serve`: hold the coordinator role for an admission directory and run the
//! discovery service (HTTP API, scan manager, history; see the `tollgate-service` crate)
//! until SIGTERM or Ctrl-C; then store running scans `interrupted`, close the API and
//! hand the role over gracefully (graceful records, clean-shutdown mark, socket removed,
//! lock released) so a client can take over without a conservative restart.
//!
//! If another process coordinates already, serve waits for the role: it polls the lock and
//! takes over when that process exits; the API starts once it holds the role. The first
//! line on stdout is `tollgate serve: listening on http://HOST:PORT`.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::signal::unix::{signal, SignalKind};
use tollgate_actors::{Coordinator, TokioClock};
use tollgate_engine::aws::telemetry::{FileTelemetry, TelemetrySink};
use tollgate_service::{RunningService, ServiceConfig, ServiceOptions, StateDir, StateDirEnv};
use tollgate_storage::{read_holder, AdmissionDir, CoordinatorLock};

/// How often serve retries the lock while another process coordinates.
const WAIT_FOR_ROLE: Duration = Duration::from_millis(100);

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
    // `[fleet]`: fleet mode for this coordinator (replacing what `TOLLGATE_FLEET_*` alone
    // installed); a variable that is set wins over the file's value (docs/fleet.md).
    if let Some(file) = &service_config.fleet {
        let env = tollgate_fleet::FleetValues::from_env()?;
        if let Some(settings) = env.or(file.clone()).settings() {
            tollgate_fleet::install(settings);
        }
    }
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
    rt.block_on(serve(Setup {
        dir,
        policies: config.policies,
        service_config,
        state_dir,
        listen: args.listen,
        telemetry,
    }))
}

struct Setup {
    dir: AdmissionDir,
    policies: tollgate_quota::PolicyTable,
    service_config: ServiceConfig,
    state_dir: StateDir,
    listen: SocketAddr,
    telemetry: Option<Arc<dyn TelemetrySink>>,
}

async fn serve(setup: Setup) -> anyhow::Result<ExitCode> {
    let Setup {
        dir,
        policies,
        service_config,
        state_dir,
        listen,
        telemetry,
    } = setup;
    let mut term = signal(SignalKind::terminate()).context("installing a SIGTERM handler")?;
    let mut int = signal(SignalKind::interrupt()).context("installing a SIGINT handler")?;
    let mut announced = false;
    let lock = loop {
        if let Some(lock) = CoordinatorLock::try_acquire(&dir)? {
            break lock;
        }
        if !announced {
            let holder =
                read_holder(&dir)?.map_or("another process".into(), |h| format!("pid {}", h.pid));
            eprintln!(
                "tollgate serve: {holder} coordinates {}; waiting to take over",
                dir.path().display()
            );
            announced = true;
        }
        tokio::select! {
            _ = term.recv() => return Ok(ExitCode::SUCCESS),
            _ = int.recv() => return Ok(ExitCode::SUCCESS),
            _ = tokio::time::sleep(WAIT_FOR_ROLE) => {}
        }
    };
    let generation = lock.generation();
    // The coordinator enforces the configuration's scheduled policies and allowances, as
    // any coordinator an engine starts does; the actors' clock counts Unix time.
    tollgate_actors::Schedules::new(
        Arc::new(policies.clone()),
        tollgate_quota::WallClock::UNIX_EPOCH,
    )
    .install_for_this_process();
    let coordinator = Coordinator::start(&dir, lock)?;
    let admission = coordinator
        .handle()
        .context("the coordinator has no admission runtime")?;
    let service = match RunningService::start(ServiceOptions {
        listen,
        config: service_config,
        state_dir: state_dir.clone(),
        admission,
        admission_dir: (dir.path().display().to_string(), dir.source().to_string()),
        policies,
        clock: Arc::new(TokioClock::system()),
        telemetry,
    })
    .await
    {
        Ok(service) => service,
        Err(e) => {
            coordinator
                .shutdown()
                .await
                .context("handing over the coordinator role")?;
            return Err(e.into());
        }
    };
    {
        let mut out = std::io::stdout().lock();
        writeln!(
            out,
            "tollgate serve: listening on http://{}",
            service.addr()
        )?;
        out.flush()?;
    }
    eprintln!(
        "tollgate serve: pid {} coordinates {} (generation {generation}); state in {}; SIGTERM or Ctrl-C stops",
        std::process::id(),
        dir.path().display(),
        state_dir.path().display()
    );
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    service.stop().await;
    coordinator
        .shutdown()
        .await
        .context("handing over the coordinator role")?;
    eprintln!("tollgate serve: handed over cleanly");
    Ok(ExitCode::SUCCESS)
}
