//! `tollgate serve`: hold the coordinator role for an admission directory until SIGTERM or
//! Ctrl-C, then hand it over gracefully (graceful records, clean-shutdown mark, socket
//! removed, lock released) so a client can take over without a conservative restart.
//!
//! If another process coordinates already, serve waits for the role: it polls the lock and
//! takes over when that process exits.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use tokio::signal::unix::{signal, SignalKind};
use tollgate_actors::Coordinator;
use tollgate_storage::{read_holder, AdmissionDir, CoordinatorLock};

/// How often serve retries the lock while another process coordinates.
const WAIT_FOR_ROLE: Duration = Duration::from_millis(100);

pub fn run(dir: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let config = tollgate_engine::EngineConfig::from_env()?.with_admission_dir(dir);
    let dir = AdmissionDir::resolve(&config.dir_env)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(serve(dir))
}

async fn serve(dir: AdmissionDir) -> anyhow::Result<ExitCode> {
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
    let coordinator = Coordinator::start(&dir, lock)?;
    eprintln!(
        "tollgate serve: pid {} coordinates {} (generation {generation}); SIGTERM or Ctrl-C hands over",
        std::process::id(),
        dir.path().display()
    );
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    coordinator
        .shutdown()
        .await
        .context("handing over the coordinator role")?;
    eprintln!("tollgate serve: handed over cleanly");
    Ok(ExitCode::SUCCESS)
}
