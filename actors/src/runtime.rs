//! Starting the admission actors: on their own thread for real use, or inside the
//! caller's actix system for simulated-time tests.
//!
//! The dedicated thread runs an actix `System`; its `Addr`s are `Send`, so any tokio
//! runtime (an embedder's, the CLI's) reaches the actors through an [`AdmissionHandle`].
//!
//! Everything the actors enforce is in the [`RuntimeConfig`]: schedules, and fleet mode's
//! table and breaker link with their host id (a coordinator resolves them from its
//! [`CoordinatorSpec`](crate::CoordinatorSpec) and directory). Nothing is read from the
//! process, so two runtimes in one process keep their own.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use actix::Actor;
use tokio::sync::oneshot;
use tollgate_quota::fleet::HostId;
use tollgate_quota::{Clock, Owner};
use tollgate_storage::{MemoryStore, QuotaStore};

use crate::breaker_board::BreakerBoard;
use crate::clock::TokioClock;
use crate::fleet::{BreakerLink, FleetSetup};
use crate::fresh_keys::FreshKeys;
use crate::handle::AdmissionHandle;
use crate::local::LocalAdmission;
use crate::persist::Persister;
use crate::quota_actor::{ActorDeps, PidAlive};
use crate::registry::{Registry, DEFAULT_EVICT_AFTER};
use crate::schedules::Schedules;
use crate::spec::CoordinatorSpec;
use crate::AdmissionError;

/// What an admission runtime is built from.
#[derive(Clone)]
pub struct RuntimeConfig {
    /// Where quota state lives.
    pub store: Arc<dyn QuotaStore>,
    /// Reservations are recorded under this owner.
    pub owner: Owner,
    /// Process liveness for reaping.
    pub pid_alive: PidAlive,
    /// Idle time before a key's actor retires, once its state is stored (5 s by default:
    /// [`DEFAULT_EVICT_AFTER`]; a fleet key waits for
    /// [`UNSTORED_EVICT_AFTER`](crate::quota_actor::UNSTORED_EVICT_AFTER) at least).
    pub evict_after: Duration,
    /// The keys' schedules and allowances (seed 003), and the clock's anchor.
    pub schedules: Schedules,
    /// Fleet mode: every key also admits under the shared table's blocks (`None`: this
    /// host's quota is its own).
    pub fleet: Option<FleetSetup>,
    /// Share the breakers with the fleet through this link (`None`: this host's own).
    pub breakers: Option<BreakerLink>,
    /// How keys without a record start: [`FreshKeys::write_ahead`] unless a coordinator
    /// of on-disk state set them ([`crate::Coordinator`]).
    pub fresh_keys: FreshKeys,
}

impl std::fmt::Debug for RuntimeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeConfig")
            .field("store", &self.store.describe())
            .field("owner", &self.owner)
            .field("fleet", &self.fleet)
            .field("breakers", &self.breakers)
            .field("fresh_keys", &self.fresh_keys)
            .finish()
    }
}

impl RuntimeConfig {
    /// A config for this process over `store`, with real pid checks, no schedules and
    /// no fleet mode (a coordinator adds its spec's: [`RuntimeConfig::with_spec`]).
    pub fn for_this_process(store: Arc<dyn QuotaStore>) -> Self {
        RuntimeConfig {
            store,
            owner: this_process_owner(),
            pid_alive: Arc::new(tollgate_storage::pid_alive),
            evict_after: DEFAULT_EVICT_AFTER,
            schedules: Schedules::none(),
            fleet: None,
            breakers: None,
            fresh_keys: FreshKeys::write_ahead(),
        }
    }

    /// `self` enforcing `spec`, as host `host` in fleet mode (`host` is read only when
    /// the spec has fleet mode; a coordinator passes its directory's host id).
    pub fn with_spec(
        mut self,
        spec: &CoordinatorSpec,
        host: impl FnOnce() -> Result<HostId, AdmissionError>,
    ) -> Result<Self, AdmissionError> {
        self.schedules = spec.schedules.clone();
        if let Some(fleet) = &spec.fleet {
            let host = host()?;
            self.breakers = fleet.breaker_link(&host);
            self.fleet = Some(fleet.setup(host));
        }
        Ok(self)
    }

    /// A config for simulated time (replays, tests on a paused clock): in-memory state,
    /// every process alive, idle keys kept for an hour of simulated time.
    pub fn simulated(owner: Owner) -> Self {
        RuntimeConfig {
            store: Arc::new(MemoryStore::new()),
            owner,
            pid_alive: Arc::new(|_| true),
            evict_after: Duration::from_secs(3_600),
            schedules: Schedules::none(),
            fleet: None,
            breakers: None,
            fresh_keys: FreshKeys::write_ahead(),
        }
    }
}

/// An actix system on a current-thread tokio runtime whose clock is paused from the start,
/// for [`RuntimeConfig::simulated`] runs (replays, tests): sleeps advance instantly when
/// nothing else can run, and timer ticks align with the simulated clock's epoch. Behind the
/// `paused-clock` feature (tokio's `test-util`), so the engine a user links has no paused
/// clock: `tollgate-replay` and the tests enable it.
#[cfg(feature = "paused-clock")]
pub fn paused_system() -> actix::SystemRunner {
    actix::System::with_tokio_rt(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .expect("a paused current-thread tokio runtime")
    })
}

/// This process's owner identity: its pid and its start instant (which tells two lives of
/// one pid apart).
pub fn this_process_owner() -> Owner {
    Owner {
        pid: tollgate_storage::current_pid(),
        generation: TokioClock::system().now().as_micros(),
    }
}

/// Start the registry in the current actix system with `clock`. For tests that drive
/// time themselves; call inside `actix::System::block_on` or an `#[actix::test]`.
pub fn start_in_current_system(config: RuntimeConfig, clock: Arc<dyn Clock>) -> AdmissionHandle {
    let persister = Persister::start(config.store.clone());
    let deps = ActorDeps {
        clock: clock.clone(),
        persister: persister.clone(),
        pid_alive: config.pid_alive.clone(),
        schedules: config.schedules.clone(),
        fleet: config.fleet,
        fresh_keys: config.fresh_keys,
    };
    let registry = Registry::new(deps, config.evict_after).start();
    let breakers = BreakerBoard::new(clock.clone())
        .with_fleet(config.breakers)
        .start();
    AdmissionHandle::local(Arc::new(LocalAdmission::new(
        registry,
        breakers,
        clock,
        config.owner,
        persister,
    )))
}

/// Admission actors on their own thread.
#[derive(Debug)]
pub struct AdmissionRuntime {
    handle: AdmissionHandle,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl AdmissionRuntime {
    /// Start the actors on a dedicated thread with the real clock.
    pub fn start(config: RuntimeConfig) -> Result<AdmissionRuntime, AdmissionError> {
        Self::start_serving(config, |_| async {})
    }

    /// Start the actors on a dedicated thread, and run `serve` (the coordinator's socket
    /// server) on that thread beside them.
    pub(crate) fn start_serving<F, Fut>(
        config: RuntimeConfig,
        serve: F,
    ) -> Result<AdmissionRuntime, AdmissionError>
    where
        F: FnOnce(Arc<LocalAdmission>) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + 'static,
    {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("tollgate-actors".into())
            .spawn(move || {
                let system = actix::System::new();
                system.block_on(async move {
                    let clock = Arc::new(TokioClock::system());
                    let handle = start_in_current_system(config, clock);
                    if let Some(local) = handle.as_local() {
                        actix::spawn(serve(local.clone()));
                    }
                    let _ = ready_tx.send(handle);
                    let _ = stop_rx.await;
                });
            })
            .map_err(|_| AdmissionError::Stopped)?;
        let handle = ready_rx.recv().map_err(|_| AdmissionError::Stopped)?;
        Ok(AdmissionRuntime {
            handle,
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }

    /// A handle to the actors.
    pub fn handle(&self) -> AdmissionHandle {
        self.handle.clone()
    }

    /// Retire every actor gracefully, flush the store and stop the thread.
    pub async fn shutdown(mut self) -> Result<(), AdmissionError> {
        let result = self.handle.shutdown().await;
        self.stop_thread();
        result
    }

    fn stop_thread(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for AdmissionRuntime {
    fn drop(&mut self) {
        self.stop_thread();
    }
}
