//! `serve_until`: hold the coordinator role for an admission directory and run the service
//! beside it until `shutdown` resolves; then store running scans `interrupted`, close the
//! API and hand the role over gracefully (graceful records, clean-shutdown mark, socket
//! removed, lock released), so a client can take over without a conservative restart.
//!
//! If another process coordinates already, it waits for the role: it polls the lock and
//! takes over when that process exits; the API starts once it holds the role. A
//! `shutdown` while waiting ends it without serving.
//!
//! Why a library call and not the binary's loop: the binary parses, calls and prints
//! (`tollgate serve` prints each [`ServeEvent`]); the election, the start order and the
//! hand-over are the service's, and a test can drive them with its own `shutdown`.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tollgate_actors::{AdmissionError, Coordinator, CoordinatorSpec, FleetSpec};
use tollgate_engine::aws::telemetry::TelemetrySink;
use tollgate_engine::fleet_degraded::DegradedNotes;
use tollgate_quota::{Clock, PolicyTable};
use tollgate_storage::{read_holder, AdmissionDir, CoordinatorLock, StorageError};

use crate::config::ServiceConfig;
use crate::run::{RunningService, ServiceError, ServiceOptions};
use crate::state_dir::StateDir;

/// How often the service retries the lock while another process coordinates.
pub const WAIT_FOR_ROLE: Duration = Duration::from_millis(100);

/// What `serve_until` runs: the directory to coordinate, what the coordinator enforces,
/// and the service's own options.
pub struct ServeSetup {
    /// The admission directory whose coordinator role the service holds.
    pub dir: AdmissionDir,
    /// Effective policies: the service's scans use them and the coordinator enforces their
    /// schedules and allowances (on the real clock).
    pub policies: PolicyTable,
    /// Fleet mode for the coordinator (`None`: this host's quota is its own).
    pub fleet: Option<FleetSpec>,
    /// The validated service configuration.
    pub config: ServiceConfig,
    /// Token and history live here.
    pub state_dir: StateDir,
    /// Where the API listens.
    pub listen: SocketAddr,
    /// Wall-clock time for records.
    pub clock: Arc<dyn Clock>,
    /// Also write every attempt event here.
    pub telemetry: Option<Arc<dyn TelemetrySink>>,
}

/// What happened, for the caller to print.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServeEvent {
    /// Another process coordinates the directory: waiting to take over (once).
    Waiting {
        /// The lock holder's pid, if the lock file names one.
        holder: Option<u32>,
    },
    /// The role is held and the API listens.
    Listening {
        /// The API's address.
        addr: SocketAddr,
        /// The coordinator lock's generation.
        generation: u64,
    },
    /// Stopped and handed the role over gracefully.
    HandedOver,
}

/// Why serving failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The admission directory's lock could not be read or taken.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// Taking the coordinator role failed.
    #[error(transparent)]
    Coordinator(AdmissionError),
    /// The coordinator started without its actors (they stopped at once).
    #[error("the coordinator has no admission runtime")]
    NoRuntime,
    /// The service could not start (the role was handed over again).
    #[error(transparent)]
    Service(#[from] ServiceError),
    /// The graceful hand-over failed; a successor restores conservatively.
    #[error("handing over the coordinator role")]
    HandOver(#[source] AdmissionError),
}

/// Wait for the coordinator role of `setup.dir`, serve until `shutdown` resolves, hand
/// over (see the module docs). `events` hears each step; call from a multi-threaded
/// tokio runtime.
pub async fn serve_until(
    setup: ServeSetup,
    mut events: impl FnMut(ServeEvent),
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    let ServeSetup {
        dir,
        policies,
        fleet,
        config,
        state_dir,
        listen,
        clock,
        telemetry,
    } = setup;
    let mut shutdown = std::pin::pin!(shutdown);
    let mut announced = false;
    let lock = loop {
        if let Some(lock) = CoordinatorLock::try_acquire(&dir)? {
            break lock;
        }
        if !announced {
            let holder = read_holder(&dir)?.map(|h| h.pid);
            events(ServeEvent::Waiting { holder });
            announced = true;
        }
        tokio::select! {
            () = &mut shutdown => return Ok(()),
            () = tokio::time::sleep(WAIT_FOR_ROLE) => {}
        }
    };
    let generation = lock.generation();
    let fleet_notes = DegradedNotes::for_spec(&fleet);
    // The coordinator enforces the policies' schedules and allowances, as any coordinator
    // an engine of the same configuration starts does.
    let spec = CoordinatorSpec::enforcing(Arc::new(policies.clone())).with_fleet(fleet);
    let coordinator = Coordinator::start(&dir, lock, &spec).map_err(ServeError::Coordinator)?;
    let admission = coordinator.handle().ok_or(ServeError::NoRuntime)?;
    let service = match RunningService::start(ServiceOptions {
        listen,
        config,
        state_dir,
        admission,
        admission_dir: (dir.path().display().to_string(), dir.source().to_string()),
        policies,
        clock,
        telemetry,
        fleet_notes,
    })
    .await
    {
        Ok(service) => service,
        Err(e) => {
            hand_over(coordinator).await?;
            return Err(e.into());
        }
    };
    events(ServeEvent::Listening {
        addr: service.addr(),
        generation,
    });
    shutdown.await;
    service.stop().await;
    hand_over(coordinator).await?;
    events(ServeEvent::HandedOver);
    Ok(())
}

async fn hand_over(coordinator: Coordinator) -> Result<(), ServeError> {
    coordinator.shutdown().await.map_err(ServeError::HandOver)
}
