//! Starting the admission actors: on their own thread for real use, or inside the
//! caller's actix system for simulated-time tests.
//!
//! The dedicated thread runs an actix `System`; its `Addr`s are `Send`, so any tokio
//! runtime (an embedder's, the CLI's) reaches the actors through an [`AdmissionHandle`].

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use actix::Actor;
use tokio::sync::oneshot;
use tollgate_quota::{Clock, Owner};
use tollgate_storage::{MemoryStore, QuotaStore};

use crate::breaker_board::BreakerBoard;
use crate::clock::{unix_now, TokioClock};
use crate::fleet::{BreakerLink, FleetSetup};
use crate::handle::AdmissionHandle;
use crate::local::LocalAdmission;
use crate::persist::Persister;
use crate::quota_actor::{ActorDeps, PidAlive};
use crate::registry::{Registry, DEFAULT_EVICT_AFTER};
use crate::schedules::Schedules;
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
    /// Idle time before a key's actor is evicted.
    pub evict_after: Duration,
    /// The keys' schedules and allowances (seed 003), and the clock's anchor.
    pub schedules: Schedules,
}

impl std::fmt::Debug for RuntimeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeConfig")
            .field("store", &self.store.describe())
            .field("owner", &self.owner)
            .finish()
    }
}

impl RuntimeConfig {
    /// A config for this process over `store`, with real pid checks and the schedules
    /// installed for this process ([`Schedules::install_for_this_process`]).
    pub fn for_this_process(store: Arc<dyn QuotaStore>) -> Self {
        RuntimeConfig {
            store,
            owner: this_process_owner(),
            pid_alive: Arc::new(tollgate_storage::pid_alive),
            evict_after: DEFAULT_EVICT_AFTER,
            schedules: Schedules::for_this_process(),
        }
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
        generation: unix_now().as_micros(),
    }
}

/// Start the registry in the current actix system with `clock`. For tests that drive
/// time themselves; call inside `actix::System::block_on` or an `#[actix::test]`.
pub fn start_in_current_system(config: RuntimeConfig, clock: Arc<dyn Clock>) -> AdmissionHandle {
    start_local(config, clock, false, None, None)
}

/// [`start_in_current_system`] in fleet mode: every key also admits under `fleet`'s
/// blocks (paused-time tests with an in-memory table).
pub fn start_in_current_system_with_fleet(
    config: RuntimeConfig,
    clock: Arc<dyn Clock>,
    fleet: FleetSetup,
) -> AdmissionHandle {
    start_local(config, clock, false, Some(fleet), None)
}

/// [`start_in_current_system`] whose breakers are shared with the fleet through `breakers`
/// (paused-time tests of fleet breakers; `fleet`: the quota side, if wanted too).
pub fn start_in_current_system_with_fleet_breakers(
    config: RuntimeConfig,
    clock: Arc<dyn Clock>,
    fleet: Option<FleetSetup>,
    breakers: BreakerLink,
) -> AdmissionHandle {
    start_local(config, clock, false, fleet, Some(breakers))
}

/// Start the registry; `unclean_takeover` says the previous coordinator crashed.
fn start_local(
    config: RuntimeConfig,
    clock: Arc<dyn Clock>,
    unclean_takeover: bool,
    fleet: Option<FleetSetup>,
    breakers: Option<BreakerLink>,
) -> AdmissionHandle {
    let unclean_takeover_at = unclean_takeover.then(|| clock.now());
    let persister = Persister::start(config.store.clone());
    let deps = ActorDeps {
        clock: clock.clone(),
        persister: persister.clone(),
        pid_alive: config.pid_alive.clone(),
        unclean_takeover_at,
        schedules: config.schedules.clone(),
        fleet,
    };
    let registry = Registry::new(deps, config.evict_after).start();
    let breakers = BreakerBoard::new(clock.clone())
        .with_fleet(breakers)
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
        Self::start_serving(config, false, None, |_| async {})
    }

    /// Start the actors on a dedicated thread, and run `serve` (the coordinator's socket
    /// server) on that thread beside them.
    pub(crate) fn start_serving<F, Fut>(
        config: RuntimeConfig,
        unclean_takeover: bool,
        fleet: Option<FleetSetup>,
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
                    // Fleet mode shares the breakers too when a breaker store is installed.
                    let breakers = fleet.as_ref().and_then(|f| {
                        crate::fleet::breakers::breaker_link_for_this_process(&f.host)
                    });
                    let handle = start_local(config, clock, unclean_takeover, fleet, breakers);
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
